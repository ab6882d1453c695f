//! Tests of the integer rules and of `convert` between all fourteen types.
use super::formats::BF16;
use super::int::{f64_to_int, i4_from_nibble, i64_to_f64_odd, round_even_for_int, wrap_i4};
use super::*;
use half::{bf16, f16};

#[test]
fn dtype_table() {
    let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    assert_eq!(names.join(" "), "f64 f32 f16 bf16 f8e4m3 f8e5m2 f4e2m1 i64 i32 i16 i8 u8 i4 bool");
    let scalar: Vec<usize> = DType::ALL.iter().map(|d| d.scalar_bytes()).collect();
    assert_eq!(scalar, [8, 4, 2, 2, 1, 1, 1, 8, 4, 2, 1, 1, 1, 1]);
    use xdal_abi::xdal_dtype::*;
    let abi = [
        XDAL_DTYPE_F64,
        XDAL_DTYPE_F32,
        XDAL_DTYPE_F16,
        XDAL_DTYPE_BF16,
        XDAL_DTYPE_F8_E4M3,
        XDAL_DTYPE_F8_E5M2,
        XDAL_DTYPE_F4_E2M1,
        XDAL_DTYPE_I64,
        XDAL_DTYPE_I32,
        XDAL_DTYPE_I16,
        XDAL_DTYPE_I8,
        XDAL_DTYPE_U8,
        XDAL_DTYPE_I4,
        XDAL_DTYPE_BOOL,
    ];
    for (d, a) in DType::ALL.iter().zip(abi) {
        assert_eq!(*d as u32, a as u32, "{d:?}");
    }
    assert_eq!(DType::F4E2M1.bytes_for(5), Some(3));
    assert_eq!(DType::I32.bytes_for(5), Some(20));
    assert_eq!(DType::F64.bytes_for(u64::MAX), None);
}

#[test]
fn float_to_int_rounds_to_nearest_even_and_saturates() {
    let cases: [(f64, i64); 12] = [
        (0.5, 0),
        (1.5, 2),
        (2.5, 2),
        (3.5, 4),
        (-0.5, 0),
        (-2.5, -2),
        (-3.5, -4),
        (2.500_000_1, 3),
        (-7.49, -7),
        (1e15 + 0.5, 1_000_000_000_000_000),
        (4_503_599_627_370_497.0, 4_503_599_627_370_497),
        (-0.0, 0),
    ];
    for (x, want) in cases {
        assert_eq!(f64_to_int(x, i64::MIN, i64::MAX), want, "{x}");
        assert_eq!(convert::<f64, i64>(x), want, "{x}");
    }
    assert_eq!(round_even_for_int(f64::NAN).to_bits(), f64::NAN.to_bits());
    assert_eq!(convert::<f64, i64>(f64::NAN), 0);
    assert_eq!(convert::<f64, i64>(f64::INFINITY), i64::MAX);
    assert_eq!(convert::<f64, i64>(-1e300), i64::MIN);
    assert_eq!(convert::<f64, i64>(9_223_372_036_854_775_808.0), i64::MAX);
    assert_eq!(convert::<f64, i64>(-9_223_372_036_854_775_808.0), i64::MIN);
    assert_eq!(convert::<f32, i32>(3e9), i32::MAX);
    assert_eq!(convert::<f32, i32>(f32::NAN), 0);
    assert_eq!(convert::<f32, i16>(-32768.5), -32768);
    assert_eq!(convert::<f32, i8>(127.5), 127);
    assert_eq!(convert::<f32, i8>(126.5), 126);
    assert_eq!(convert::<f32, u8>(-1.0), 0);
    assert_eq!(convert::<f32, u8>(254.5), 254);
    assert_eq!(convert::<f32, u8>(255.5), 255);
    assert_eq!(convert::<f32, I4>(7.5), I4(7));
    assert_eq!(convert::<f32, I4>(-8.5), I4(-8));
    assert_eq!(convert::<f32, I4>(-100.0), I4(-8));
    assert_eq!(convert::<f16, I4>(f16::from_f32(6.5)), I4(6));
    assert_eq!(convert::<F8E4M3, u8>(F8E4M3(0x7E)), 255);
    assert_eq!(convert::<F8E4M3, i8>(F8E4M3(0x7F)), 0);
    assert_eq!(convert::<F8E5M2, i16>(F8E5M2(0xFC)), i16::MIN);
    assert_eq!(convert::<F4E2M1, i8>(F4E2M1(0xF)), -6);
    assert_eq!(convert::<bf16, i64>(bf16::from_f32(-2.5)), -2);
}

#[test]
fn int_to_int_wraps() {
    assert_eq!(convert::<i32, i8>(300), 44);
    assert_eq!(convert::<i64, i32>(1 << 40 | 5), 5);
    assert_eq!(convert::<u8, i8>(200), -56);
    assert_eq!(convert::<i8, u8>(-1), 255);
    assert_eq!(convert::<i16, u8>(-2), 254);
    assert_eq!(convert::<u8, i64>(255), 255);
    assert_eq!(convert::<i64, I4>(9), I4(-7));
    assert_eq!(convert::<i8, I4>(-9), I4(7));
    assert_eq!(convert::<i32, I4>(8), I4(-8));
    assert_eq!(convert::<I4, u8>(I4(-1)), 255);
    assert_eq!(convert::<I4, i64>(I4(-8)), -8);
    for x in -300i64..300 {
        assert_eq!(i64::from(wrap_i4(x)), (x + 8).rem_euclid(16) - 8);
    }
    for nibble in 0u8..16 {
        let v = i4_from_nibble(nibble);
        assert!((-8..8).contains(&v));
        assert_eq!(I4::from_bits(u64::from(nibble)).to_bits(), u64::from(nibble));
    }
}

#[test]
fn bool_conversions() {
    assert_eq!(convert::<f32, Bool>(f32::NAN), Bool(1));
    assert_eq!(convert::<f32, Bool>(-0.0), Bool(0));
    assert_eq!(convert::<f64, Bool>(1e-300), Bool(1));
    assert_eq!(convert::<f16, Bool>(f16::from_bits(0x8000)), Bool(0));
    assert_eq!(convert::<F8E4M3, Bool>(F8E4M3(0x80)), Bool(0));
    assert_eq!(convert::<F8E4M3, Bool>(F8E4M3(0xFF)), Bool(1));
    assert_eq!(convert::<F4E2M1, Bool>(F4E2M1(0x8)), Bool(0));
    assert_eq!(convert::<I4, Bool>(I4(-8)), Bool(1));
    assert_eq!(convert::<u8, Bool>(0), Bool(0));
    assert_eq!(convert::<i64, Bool>(1 << 40), Bool(1));
    assert_eq!(convert::<Bool, f16>(Bool(7)), f16::ONE);
    assert_eq!(convert::<Bool, I4>(Bool(1)), I4(1));
    assert_eq!(convert::<Bool, F4E2M1>(Bool(1)), F4E2M1(2));
    assert_eq!(convert::<Bool, F8E4M3>(Bool(0)), F8E4M3(0));
    assert_eq!(convert::<Bool, i32>(Bool(255)), 1);
    assert_eq!(Bool(9).canonical(), Bool(1));
}

/// `x` rounded to `p` significant bits, ties to even, by exact integer
/// arithmetic: the reference for integer-to-float conversion.
fn round_to_bits(x: i64, p: u32) -> i128 {
    let m = i128::from(x).abs();
    let width = 128 - m.leading_zeros();
    if width <= p {
        return i128::from(x);
    }
    let drop = width - p;
    let (q, r, half) = (m >> drop, m & ((1 << drop) - 1), 1i128 << (drop - 1));
    let q = if r > half || (r == half && q & 1 == 1) { q + 1 } else { q };
    (q << drop) * i128::from(x.signum())
}

#[test]
fn wide_int_to_float_rounds_once() {
    // Through f64 with round-to-nearest, 2^62 + 2^38 + 1 lands on the f32
    // midpoint and then ties down; correctly rounded it goes up.
    let x = (1i64 << 62) + (1 << 38) + 1;
    assert_eq!(convert::<i64, f32>(x), ((1i64 << 62) + (1 << 39)) as f32);
    let x = (1i64 << 62) + (1 << 54) + 1;
    assert_eq!(f64::from(convert::<i64, bf16>(x).to_f32()), ((1i64 << 62) + (1 << 55)) as f64);
    assert_eq!(i64_to_f64_odd((1 << 53) + 1), ((1i64 << 53) + 2) as f64);
    assert_eq!(i64_to_f64_odd(-(1 << 53) - 1), -((1i64 << 53) + 2) as f64);
    assert_eq!(i64_to_f64_odd(i64::MIN), -(2f64.powi(63)));
    // A spread of wide values, against exact integer rounding.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..20_000 {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let x = (state as i64) >> (state % 40);
        let f32_want = round_to_bits(x, 24) as f64;
        assert_eq!(f64::from(convert::<i64, f32>(x)), f32_want, "{x}");
        let bf_want = round_to_bits(x, 8) as f64;
        let bf_got = convert::<i64, bf16>(x);
        // bf16 has f32's range, so nothing overflows.
        assert_eq!(BF16.decode(u32::from(bf_got.to_bits())), bf_want, "{x}");
        assert_eq!(convert::<i64, f64>(x), round_to_bits(x, 53) as f64, "{x}");
    }
    assert_eq!(convert::<i64, f16>(1 << 60), f16::INFINITY);
    assert_eq!(convert::<i64, F8E4M3>(-(1 << 60)), F8E4M3(0xFE));
    assert_eq!(convert::<i64, F8E5M2>(1 << 60), F8E5M2(0x7C));
    assert_eq!(convert::<i32, F4E2M1>(5), F4E2M1(6));
    assert_eq!(convert::<i32, F4E2M1>(-7), F4E2M1(0xF));
    assert_eq!(convert::<i16, f16>(2049), f16::from_f32(2048.0));
    assert_eq!(convert::<i16, f16>(2051), f16::from_f32(2052.0));
}

#[test]
fn float_to_float() {
    assert_eq!(convert::<f64, f32>(1.0 + 2f64.powi(-24)), 1.0);
    assert_eq!(convert::<f64, f32>(1.0 + 3.0 * 2f64.powi(-24)), 1.0 + 2f32.powi(-22));
    assert_eq!(convert::<f32, F8E4M3>(f32::NAN), F8E4M3(0x7F));
    assert_eq!(convert::<f32, F8E4M3>(-f32::NAN), F8E4M3(0xFF));
    assert_eq!(convert::<f32, F8E4M3>(f32::INFINITY), F8E4M3(0x7E));
    assert_eq!(convert::<f32, F4E2M1>(f32::NAN), F4E2M1(0));
    assert_eq!(convert::<f64, F8E5M2>(1e6), F8E5M2(0x7C));
    assert!(convert::<f32, bf16>(f32::NAN).is_nan());
    assert!(convert::<F8E5M2, f16>(F8E5M2(0x7F)).is_nan());
    assert_eq!(convert::<F8E5M2, f16>(F8E5M2(0xFC)), f16::NEG_INFINITY);
    assert_eq!(convert::<f16, F8E5M2>(f16::from_bits(0x3C80)), F8E5M2(0x3C));
    assert_eq!(convert::<f16, F8E5M2>(f16::from_bits(0x3D80)), F8E5M2(0x3E));
    assert!(convert::<f32, f64>(-0.0).is_sign_negative());
    assert_eq!(convert::<f64, F4E2M1>(-0.0), F4E2M1(0x8));
    // The same type keeps its bits, NaN payloads included.
    let odd_nan = f32::from_bits(0x7FA0_0001);
    assert_eq!(convert::<f32, f32>(odd_nan).to_bits(), 0x7FA0_0001);
    assert_eq!(convert::<F8E5M2, F8E5M2>(F8E5M2(0x7D)), F8E5M2(0x7D));
}

/// Every encoding of every narrow float converts to every type exactly as
/// decoding to `f64` and converting from there would: the fast `f32` route
/// agrees with the exact one.
#[test]
fn narrow_float_sources_agree_with_the_f64_route() {
    fn all_targets<S: Elem>(count: u64) {
        for bits in 0..count {
            let s = S::from_bits(bits);
            macro_rules! check {
                ($d:ty) => {{
                    let fast: $d = convert::<S, $d>(s);
                    let slow: $d = if <$d as Elem>::DTYPE == S::DTYPE {
                        <$d as Elem>::from_bits(bits)
                    } else if <$d as Elem>::DTYPE.class() == Class::Bool {
                        <$d as Elem>::from_bool(s.is_nonzero())
                    } else {
                        <$d as Elem>::from_f64(s.to_f64())
                    };
                    let same = Elem::to_bits(fast) == Elem::to_bits(slow)
                        || (<$d as Elem>::DTYPE.class() == Class::Float
                            && Elem::to_f64(fast).is_nan()
                            && Elem::to_f64(slow).is_nan());
                    assert!(same, "{:?} {bits:#x} -> {:?}", S::DTYPE, <$d as Elem>::DTYPE);
                }};
            }
            for_each_elem!(check);
        }
    }
    all_targets::<f16>(1 << 16);
    all_targets::<bf16>(1 << 16);
    all_targets::<F8E4M3>(256);
    all_targets::<F8E5M2>(256);
    all_targets::<F4E2M1>(16);
}
