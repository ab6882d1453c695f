//! Tests of `convert_trunc`: hand-written values, and every encoding of
//! the narrow floats against an independent reference.
use super::*;
use half::{bf16, f16};

#[test]
fn float_to_int_truncates_toward_zero() {
    assert_eq!(convert_trunc::<f32, i32>(2.7), 2);
    assert_eq!(convert_trunc::<f32, i32>(-2.7), -2);
    assert_eq!(convert_trunc::<f32, i32>(2.5), 2);
    assert_eq!(convert_trunc::<f32, i32>(3.5), 3);
    assert_eq!(convert_trunc::<f32, i32>(-0.9), 0);
    assert_eq!(convert_trunc::<f64, i64>(-1e15 - 0.5), -1_000_000_000_000_000);
    assert_eq!(convert_trunc::<f64, i64>(4_503_599_627_370_497.0), 4_503_599_627_370_497);
    assert_eq!(convert_trunc::<f16, i16>(f16::from_f32(-7.75)), -7);
    assert_eq!(convert_trunc::<bf16, i8>(bf16::from_f32(126.5)), 126);
    assert_eq!(convert_trunc::<F8E4M3, u8>(F8E4M3(0x3B)), 1); // 1.375
    assert_eq!(convert_trunc::<F4E2M1, i8>(F4E2M1(0xB)), -1); // -1.5
    assert_eq!(convert_trunc::<F4E2M1, I4>(F4E2M1(0x5)), I4(3)); // 3
    assert_eq!(convert_trunc::<f32, I4>(7.9), I4(7));
    assert_eq!(convert_trunc::<f32, I4>(-8.9), I4(-8));
}

#[test]
fn float_to_int_saturates_and_maps_nan_to_zero() {
    assert_eq!(convert_trunc::<f32, i32>(3e9), i32::MAX);
    assert_eq!(convert_trunc::<f32, i32>(-3e9), i32::MIN);
    assert_eq!(convert_trunc::<f32, i32>(f32::INFINITY), i32::MAX);
    assert_eq!(convert_trunc::<f32, i32>(f32::NAN), 0);
    assert_eq!(convert_trunc::<f64, i64>(1e300), i64::MAX);
    assert_eq!(convert_trunc::<f64, i64>(-9_223_372_036_854_775_808.0), i64::MIN);
    assert_eq!(convert_trunc::<f64, i64>(f64::NAN), 0);
    assert_eq!(convert_trunc::<f32, u8>(-1.5), 0);
    assert_eq!(convert_trunc::<f32, u8>(-0.5), 0);
    assert_eq!(convert_trunc::<f32, u8>(255.9), 255);
    assert_eq!(convert_trunc::<f32, u8>(300.7), 255);
    assert_eq!(convert_trunc::<f32, i8>(-128.9), -128);
    assert_eq!(convert_trunc::<f32, i16>(40000.0), i16::MAX);
    assert_eq!(convert_trunc::<f32, I4>(100.0), I4(7));
    assert_eq!(convert_trunc::<f32, I4>(f32::NEG_INFINITY), I4(-8));
    assert_eq!(convert_trunc::<F8E5M2, i16>(F8E5M2(0xFC)), i16::MIN);
    assert_eq!(convert_trunc::<F8E4M3, i8>(F8E4M3(0x7F)), 0);
}

#[test]
fn e4m3_overflow_is_nan() {
    let e4m3 = |x: f32| convert_trunc::<f32, F8E4M3>(x).0;
    assert_eq!(e4m3(448.0), 0x7E);
    assert_eq!(e4m3(464.0), 0x7E, "the tie rounds to 448");
    assert_eq!(e4m3(-464.0), 0xFE);
    assert_eq!(e4m3(464.1), 0x7F);
    assert_eq!(e4m3(-500.0), 0xFF);
    assert_eq!(e4m3(1e6), 0x7F);
    assert_eq!(e4m3(f32::INFINITY), 0x7F);
    assert_eq!(e4m3(f32::NEG_INFINITY), 0xFF);
    assert_eq!(e4m3(f32::NAN), 0x7F);
    assert_eq!(e4m3(17.0), 0x58, "in range: as cast, ties to even");
    assert_eq!(e4m3(1.0), 0x38);
    assert_eq!(convert_trunc::<f64, F8E4M3>(464.000_000_000_1).0, 0x7F);
    assert_eq!(convert_trunc::<f64, F8E4M3>(-464.0).0, 0xFE);
    assert_eq!(convert_trunc::<F8E5M2, F8E4M3>(F8E5M2(0x7B)).0, 0x7F, "57344");
    assert_eq!(convert_trunc::<F8E5M2, F8E4M3>(F8E5M2(0xFC)).0, 0xFF, "-inf");
    assert_eq!(convert_trunc::<f16, F8E4M3>(f16::from_f32(464.0)).0, 0x7E);
    assert_eq!(convert_trunc::<i32, F8E4M3>(464).0, 0x7E);
    assert_eq!(convert_trunc::<i32, F8E4M3>(465).0, 0x7F);
    assert_eq!(convert_trunc::<i64, F8E4M3>(i64::MIN).0, 0xFF);
    assert_eq!(convert_trunc::<I4, F8E4M3>(I4(-8)).0, 0xD0);
    assert_eq!(convert_trunc::<Bool, F8E4M3>(Bool(1)).0, 0x38);
    assert_eq!(convert_trunc::<F8E4M3, F8E4M3>(F8E4M3(0x7F)).0, 0x7F);
}

#[test]
fn everything_else_is_convert() {
    assert_eq!(convert_trunc::<f32, f16>(1e6), convert::<f32, f16>(1e6));
    assert_eq!(convert_trunc::<f32, F4E2M1>(100.0), F4E2M1(0x7), "E2M1 still saturates");
    assert_eq!(convert_trunc::<f32, F8E5M2>(1e6), F8E5M2(0x7C));
    assert_eq!(convert_trunc::<i32, i8>(300), 44);
    assert_eq!(convert_trunc::<f32, Bool>(0.25), Bool(1));
    assert_eq!(convert_trunc::<i64, f32>(16_777_217), 16_777_216.0);
}

/// An independent reference for float sources: the exact value, truncated
/// with `f64::trunc` and compared against the bounds, or checked against
/// E4M3's limit; `convert` otherwise. The kernel tests use it too.
pub(crate) fn reference<S: Elem, D: Elem>(s: S) -> D {
    let x = s.to_f64();
    match D::DTYPE.class() {
        Class::Int if S::DTYPE.class() == Class::Float => {
            let (lo, hi) = match D::DTYPE {
                DType::I64 => (i64::MIN as f64, 9_223_372_036_854_775_807.0),
                DType::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
                DType::I16 => (f64::from(i16::MIN), f64::from(i16::MAX)),
                DType::I8 => (f64::from(i8::MIN), f64::from(i8::MAX)),
                DType::U8 => (0.0, 255.0),
                _ => (-8.0, 7.0),
            };
            let t = x.trunc();
            let v = if x.is_nan() {
                0
            } else if t <= lo {
                lo as i64
            } else if t >= hi {
                hi as i64
            } else {
                t as i64
            };
            D::from_i64(v)
        }
        Class::Float if D::DTYPE == DType::F8E4M3 && S::DTYPE != DType::F8E4M3 => {
            if x.is_nan() || x.abs() > 464.0 {
                D::from_bits(if x.is_sign_negative() { 0xFF } else { 0x7F })
            } else {
                convert(s)
            }
        }
        _ => convert(s),
    }
}

#[test]
fn every_narrow_encoding_against_the_reference() {
    fn from_all<S: Elem>(count: u64) {
        for bits in 0..count {
            let s = S::from_bits(bits);
            macro_rules! check {
                ($d:ty) => {{
                    let got: $d = convert_trunc::<S, $d>(s);
                    let want: $d = reference::<S, $d>(s);
                    let same = Elem::to_bits(got) == Elem::to_bits(want)
                        || (<$d as Elem>::DTYPE.class() == Class::Float
                            && Elem::to_f64(got).is_nan()
                            && Elem::to_f64(want).is_nan());
                    assert!(same, "{:?} {bits:#x} -> {:?}", S::DTYPE, <$d as Elem>::DTYPE);
                }};
            }
            for_each_elem!(check);
        }
    }
    from_all::<f16>(1 << 16);
    from_all::<bf16>(1 << 16);
    from_all::<F8E4M3>(256);
    from_all::<F8E5M2>(256);
    from_all::<F4E2M1>(16);
    // f32 and f64: a spread of values around the integer boundaries.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let x = f64::from_bits(state) % 1e20;
        let y = (state >> 11) as f64 / (1u64 << 40) as f64 - 4096.0;
        for v in [x, y, y.trunc(), -y] {
            macro_rules! check {
                ($d:ty) => {{
                    assert_eq!(Elem::to_bits(convert_trunc::<f64, $d>(v)), Elem::to_bits(reference::<f64, $d>(v)));
                    let w = v as f32;
                    assert_eq!(Elem::to_bits(convert_trunc::<f32, $d>(w)), Elem::to_bits(reference::<f32, $d>(w)));
                }};
            }
            check!(i64);
            check!(i32);
            check!(i16);
            check!(i8);
            check!(u8);
            check!(I4);
        }
    }
}

/// `trunc_differs` is true exactly for the pairs where some value converts
/// differently.
#[test]
fn trunc_differs_names_the_pairs_that_differ() {
    fn pairs_from<S: Elem>(values: &[f64]) {
        macro_rules! check {
            ($d:ty) => {{
                let differs = values.iter().any(|&x| {
                    let s = S::from_f64(x);
                    Elem::to_bits(convert_trunc::<S, $d>(s)) != Elem::to_bits(convert::<S, $d>(s))
                });
                assert_eq!(
                    differs,
                    trunc_differs(S::DTYPE, <$d as Elem>::DTYPE),
                    "{:?} -> {:?}",
                    S::DTYPE,
                    <$d as Elem>::DTYPE
                );
            }};
        }
        for_each_elem!(check);
    }
    // 1.5 rounds and truncates differently; 500 overflows E4M3 (and
    // becomes what the smaller types can hold).
    let values = [1.5, 500.0, -500.0];
    macro_rules! run {
        ($s:ty) => {
            pairs_from::<$s>(&values)
        };
    }
    for_each_elem!(run);
}
