//! The concrete narrow float formats: IEEE binary16, bfloat16, and the OCP
//! microscaling FP8 E4M3, FP8 E5M2 and FP4 E2M1, and their correctly
//! rounded encoders from `f64` (the `f32` ones are in `fast`).
//!
//! Encoding from `f64` goes through the generic codec in `minifloat`. For
//! F16 and BF16 from `f64` we do not use `half`: its `f16::from_f64` converts
//! through `f32` on CPUs with F16C, rounding twice.
use super::minifloat::{Format, Nan, Overflow};

/// IEEE binary16.
pub(crate) const F16: Format =
    Format { exp_bits: 5, man_bits: 10, bias: 15, nan: Nan::Ieee, overflow: Overflow::Infinity };

/// bfloat16: binary32's exponent range, 7 fraction bits.
pub(crate) const BF16: Format =
    Format { exp_bits: 8, man_bits: 7, bias: 127, nan: Nan::Ieee, overflow: Overflow::Infinity };

/// OCP FP8 E4M3: bias 7, no infinities, NaN only `S.1111.111`, max 448;
/// conversions saturate.
pub(crate) const E4M3: Format =
    Format { exp_bits: 4, man_bits: 3, bias: 7, nan: Nan::AllOnes, overflow: Overflow::Saturate };

/// OCP FP8 E5M2: bias 15, IEEE-like (infinities, NaNs), max 57344.
pub(crate) const E5M2: Format =
    Format { exp_bits: 5, man_bits: 2, bias: 15, nan: Nan::Ieee, overflow: Overflow::Infinity };

/// OCP FP4 E2M1: bias 1, values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives;
/// no infinity or NaN; conversions saturate and NaN becomes +0.
pub(crate) const E2M1: Format =
    Format { exp_bits: 2, man_bits: 1, bias: 1, nan: Nan::None, overflow: Overflow::Saturate };

/// `x` as binary16 bits, correctly rounded from `f64`.
pub(crate) fn f16_from_f64(x: f64) -> half::f16 {
    half::f16::from_bits(F16.encode(x) as u16)
}

/// `x` as bfloat16 bits, correctly rounded from `f64`.
pub(crate) fn bf16_from_f64(x: f64) -> half::bf16 {
    half::bf16::from_bits(BF16.encode(x) as u16)
}

/// FP8 E4M3 encoding of `x`, correctly rounded, saturating to +-448.
#[inline]
pub(crate) fn f8e4m3_from_f64(x: f64) -> u8 {
    E4M3.encode(x) as u8
}

/// FP8 E5M2 encoding of `x`, correctly rounded; overflow gives infinity.
#[inline]
pub(crate) fn f8e5m2_from_f64(x: f64) -> u8 {
    E5M2.encode(x) as u8
}

/// FP4 E2M1 encoding of `x` (in the low nibble), correctly rounded,
/// saturating to +-6; NaN gives +0.
#[inline]
pub(crate) fn f4e2m1_from_f64(x: f64) -> u8 {
    E2M1.encode(x) as u8
}
