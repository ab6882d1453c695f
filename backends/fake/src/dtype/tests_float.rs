//! Tests of the float codecs: every encoding of the 8- and 4-bit formats,
//! every rounding boundary of all five narrow formats, and `half`'s `f32`
//! conversions against our own codec.
use super::fast::*;
use super::formats::*;
use super::minifloat::Format;

/// The five narrow formats, named for messages.
const FORMATS: [(&str, Format); 5] = [("f16", F16), ("bf16", BF16), ("e4m3", E4M3), ("e5m2", E5M2), ("e2m1", E2M1)];

/// The next `f64` above / below `x` (finite, positive).
fn up(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1)
}
fn down(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}
/// The next `f32` above / below `x` (finite, positive); `f32::next_up` is
/// newer than the crate's minimum Rust.
fn up32(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}
fn down32(x: f32) -> f32 {
    f32::from_bits(x.to_bits() - 1)
}

/// Decoding with the fast `f32` decoder, for the formats that have one.
fn fast_decode(name: &str, bits: u32) -> Option<f32> {
    let b = bits as u8;
    match name {
        "e4m3" => Some(f8e4m3_to_f32(b)),
        "e5m2" => Some(f8e5m2_to_f32(b)),
        "e2m1" => Some(f4e2m1_to_f32(b)),
        "f16" => Some(f16_to_f32(bits as u16)),
        "bf16" => Some(half::bf16::from_bits(bits as u16).to_f32()),
        _ => None,
    }
}

#[test]
fn every_encoding_decodes_exactly_and_round_trips() {
    for (name, fmt) in FORMATS {
        let count = fmt.sign_bit() * 2;
        for bits in 0..count {
            let v = fmt.decode(bits);
            let fast = fast_decode(name, bits).unwrap();
            if fmt.is_nan(bits) {
                assert!(v.is_nan() && fast.is_nan(), "{name} {bits:#x}");
                let again = fmt.encode(v);
                assert!(fmt.is_nan(again), "{name} {bits:#x} -> {again:#x}");
                assert_eq!(again & fmt.sign_bit(), bits & fmt.sign_bit());
                continue;
            }
            assert_eq!(f64::from(fast).to_bits(), v.to_bits(), "{name} {bits:#x}");
            assert_eq!(fmt.encode(v), bits, "{name} {bits:#x} = {v}");
        }
    }
}

#[test]
fn known_values() {
    assert_eq!(E4M3.decode(0x7E), 448.0);
    assert_eq!(E4M3.decode(0x78), 256.0);
    assert_eq!(E4M3.decode(0x08), 2f64.powi(-6));
    assert_eq!(E4M3.decode(0x01), 2f64.powi(-9));
    assert_eq!(E4M3.decode(0xFE), -448.0);
    assert!(E4M3.decode(0x7F).is_nan() && E4M3.decode(0xFF).is_nan());
    assert_eq!((0..256).filter(|&b| E4M3.is_nan(b)).count(), 2);
    assert_eq!(E5M2.decode(0x7B), 57344.0);
    assert_eq!(E5M2.decode(0x7C), f64::INFINITY);
    assert_eq!(E5M2.decode(0xFC), f64::NEG_INFINITY);
    assert_eq!(E5M2.decode(0x04), 2f64.powi(-14));
    assert_eq!(E5M2.decode(0x01), 2f64.powi(-16));
    assert_eq!((0..256).filter(|&b| E5M2.is_nan(b)).count(), 6);
    let e2m1: Vec<f64> = (0..16).map(|b| E2M1.decode(b)).collect();
    assert_eq!(e2m1, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]);
    assert!(e2m1[8].is_sign_negative());
    assert_eq!(F16.decode(0x7BFF), 65504.0);
    assert_eq!(BF16.decode(0x3F80), 1.0);
}

/// Between every two neighbouring finite encodings: the midpoint ties to
/// the even one, and the values just beside it go to the nearer one.
#[test]
fn midpoints_tie_to_even_and_neighbours_round_to_nearest() {
    for (name, fmt) in FORMATS {
        for lo in 0..fmt.max_finite() {
            let hi = lo + 1;
            let (a, b) = (fmt.decode(lo), fmt.decode(hi));
            // Both have few significant bits: the midpoint is exact.
            let mid = (a + b) / 2.0;
            let even = if lo % 2 == 0 { lo } else { hi };
            for (sign, s) in [(0, 1.0), (fmt.sign_bit(), -1.0)] {
                assert_eq!(fmt.encode(s * mid), sign | even, "{name} mid {lo:#x}");
                assert_eq!(fmt.encode(s * up(mid)), sign | hi, "{name} above {lo:#x}");
                assert_eq!(fmt.encode(s * down(mid)), sign | lo, "{name} below {lo:#x}");
            }
        }
    }
}

#[test]
fn largest_finite_and_overflow() {
    for (name, fmt) in FORMATS {
        let max = fmt.max_finite();
        let top = fmt.decode(max);
        // Where the next encoding would be, one step of the top binade up.
        let step = top - fmt.decode(max - 1);
        let mid = top + step / 2.0;
        let over = fmt.infinity().unwrap_or(max);
        for (sign, s) in [(0, 1.0), (fmt.sign_bit(), -1.0)] {
            assert_eq!(fmt.encode(s * top), sign | max, "{name}");
            assert_eq!(fmt.encode(s * down(mid)), sign | max, "{name}");
            assert_eq!(fmt.encode(s * mid), sign | over, "{name}");
            assert_eq!(fmt.encode(s * 1e300), sign | over, "{name}");
            assert_eq!(fmt.encode(s * f64::INFINITY), sign | over, "{name}");
        }
    }
    assert_eq!(E4M3.encode(464.0), 0x7E);
    assert_eq!(E4M3.encode(1e9), 0x7E);
    assert_eq!(E4M3.encode(f64::NEG_INFINITY), 0xFE);
    assert_eq!(E5M2.encode(61439.0), 0x7B);
    assert_eq!(E5M2.encode(61440.0), 0x7C);
    assert_eq!(E2M1.encode(7.0), 0x7);
    assert_eq!(E2M1.encode(-100.0), 0xF);
}

#[test]
fn nan_encodings() {
    assert_eq!(E4M3.encode(f64::NAN), 0x7F);
    assert_eq!(E4M3.encode(-f64::NAN), 0xFF);
    assert_eq!(E5M2.encode(f64::NAN), 0x7E);
    assert_eq!(E5M2.encode(-f64::NAN), 0xFE);
    assert_eq!(E2M1.encode(f64::NAN), 0);
    assert_eq!(E2M1.encode(-f64::NAN), 0);
    assert_eq!(F16.encode(f64::NAN), 0x7E00);
    assert_eq!(BF16.encode(-f64::NAN), 0xFFC0);
}

#[test]
fn subnormals_and_signed_zero() {
    for (name, fmt) in FORMATS {
        let tiny = fmt.decode(1);
        for (sign, s) in [(0, 1.0), (fmt.sign_bit(), -1.0)] {
            assert_eq!(fmt.encode(s * tiny), sign | 1, "{name}");
            assert_eq!(fmt.encode(s * tiny / 2.0), sign, "{name} half tiny ties to 0");
            assert_eq!(fmt.encode(s * up(tiny / 2.0)), sign | 1, "{name}");
            assert_eq!(fmt.encode(s * down(tiny / 2.0)), sign, "{name}");
            assert_eq!(fmt.encode(s * tiny * 1.5), sign | 2, "{name} 1.5 tiny ties to 2");
            assert_eq!(fmt.encode(s * tiny / 1e10), sign, "{name}");
            assert_eq!(fmt.encode(s * f64::MIN_POSITIVE / 4.0), sign, "{name} f64 subnormal");
            assert_eq!(fmt.encode(s * 0.0), sign, "{name} zero keeps its sign");
        }
        // The largest subnormal rounds up into the smallest normal.
        let min_normal = 1 << fmt.man_bits;
        let last_sub = fmt.decode(min_normal - 1);
        let mid = (last_sub + fmt.decode(min_normal)) / 2.0;
        assert_eq!(fmt.encode(up(mid)), min_normal, "{name}");
    }
    assert_eq!(E2M1.encode(0.25), 0);
    assert_eq!(E2M1.encode(0.26), 1);
    assert_eq!(E2M1.encode(0.75), 2);
    assert_eq!(E2M1.encode(2.5), 4);
    assert_eq!(E2M1.encode(3.5), 6);
    assert_eq!(E2M1.encode(5.0), 6);
    assert_eq!(E2M1.encode(5.01), 7);
}

/// `half`'s `f32` conversions, which the kernels use, agree with our codec
/// on a spread of `f32` values and on every rounding boundary.
#[test]
fn half_f32_conversions_are_correctly_rounded() {
    let check = |x: f32| {
        let h = half::f16::from_f32(x).to_bits();
        let ours = F16.encode(f64::from(x)) as u16;
        let fast = f16_from_f32(x);
        let b = half::bf16::from_f32(x).to_bits();
        let ours_b = BF16.encode(f64::from(x)) as u16;
        if x.is_nan() {
            assert!(F16.is_nan(u32::from(h)) && BF16.is_nan(u32::from(b)));
            assert_eq!(fast, 0x7E00 | (x.to_bits() >> 16) as u16 & 0x8000);
        } else {
            assert_eq!(h, ours, "f16 {x:e} ({:#x})", x.to_bits());
            assert_eq!(fast, ours, "fast f16 {x:e} ({:#x})", x.to_bits());
            assert_eq!(b, ours_b, "bf16 {x:e} ({:#x})", x.to_bits());
        }
    };
    let mut bits = 0u32;
    while let Some(next) = bits.checked_add(65_537) {
        check(f32::from_bits(bits));
        bits = next;
    }
    for fmt in [F16, BF16] {
        for lo in 0..fmt.max_finite() {
            let mid = ((fmt.decode(lo) + fmt.decode(lo + 1)) / 2.0) as f32;
            for x in [mid, up32(mid), down32(mid)] {
                check(x);
                check(-x);
            }
        }
    }
}

#[test]
fn own_f16_bf16_from_f64() {
    // A value that rounding through f32 first gets wrong: just above an f16
    // midpoint by less than an f32 step.
    let mid = (1.0 + F16.decode(0x3C01)) / 2.0;
    let x = mid + 2f64.powi(-40);
    assert_eq!(f16_from_f64(x).to_bits(), 0x3C01);
    assert_eq!(half::f16::from_f32(x as f32).to_bits(), 0x3C00);
    let mid = (1.0 + BF16.decode(0x3F81)) / 2.0;
    assert_eq!(bf16_from_f64(mid + 2f64.powi(-40)).to_bits(), 0x3F81);
    assert_eq!(bf16_from_f64(mid).to_bits(), 0x3F80);
}

/// The branch-free `f32` encoders agree with the exact codec on a spread
/// of `f32` values (NaNs, infinities, subnormals included) and on every
/// rounding boundary of their formats.
#[test]
fn fast_f32_encoders_match_the_exact_codec() {
    type Encoder = (&'static str, Format, fn(f32) -> u32);
    let encoders: [Encoder; 4] = [
        ("f16", F16, |x| u32::from(f16_from_f32(x))),
        ("e4m3", E4M3, |x| u32::from(f8e4m3_from_f32(x))),
        ("e5m2", E5M2, |x| u32::from(f8e5m2_from_f32(x))),
        ("e2m1", E2M1, |x| u32::from(f4e2m1_from_f32(x))),
    ];
    for (name, fmt, fast) in encoders {
        let check = |x: f32| {
            let (got, want) = (fast(x), fmt.encode(f64::from(x)));
            assert_eq!(got, want, "{name} {x:e} ({:#x})", x.to_bits());
        };
        for bits in (0..=u32::MAX).step_by(1 << 14) {
            check(f32::from_bits(bits));
        }
        for lo in 0..fmt.max_finite() {
            let (a, b) = (fmt.decode(lo), fmt.decode(lo + 1));
            for x in [a, b, (a + b) / 2.0] {
                let x = x as f32;
                for y in [x, up32(x), down32(x.max(f32::MIN_POSITIVE))] {
                    check(y);
                    check(-y);
                }
            }
        }
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN_POSITIVE, 1e-45, 0.0, -0.0] {
            check(x);
        }
    }
}
