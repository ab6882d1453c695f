//! Branch-free conversions between `f32` and the narrow float formats, for
//! the kernels' inner loops: every case (normal, subnormal, overflow, NaN)
//! is computed with plain integer and float operations and the right one
//! selected, so the compiler can vectorise loops over them. The tests check
//! them against the exact codec in `minifloat` (every encoding decoded,
//! every rounding boundary encoded).
//!
//! Not `half`'s conversions: with its `std` feature those test for F16C at
//! run time and call out of line for every element, which is ten times
//! slower in a loop.
use super::formats::{E2M1, E4M3, E5M2, F16};
use super::minifloat::{Format, Nan, Overflow};

/// `f32` bits of `2^e`.
const fn pow2_bits(e: i32) -> u32 {
    ((e + 127) as u32) << 23
}

/// `x` encoded in `fmt` (one of the formats narrower than `f32`), rounded to
/// nearest even. Written for `fmt` a constant, which inlining folds away.
///
/// The method is the classic one for binary16 (after F. Giesen's
/// `float_to_half_fast3_rtne`), made generic:
/// - normal results: rebias the exponent in the bit pattern and add half an
///   ulp less one, plus the lowest kept bit (ties to even), before
///   truncating; a carry out of the fraction correctly bumps the exponent;
/// - subnormal results: add a power of two whose ulp is the format's
///   smallest subnormal, so the FPU rounds, and read the fraction off;
/// - at or above `2^(emax + 1)`, infinities included: overflow; below it,
///   a rounding carry past the largest finite value gives infinity's
///   pattern (IEEE formats) or is clamped (saturating formats).
#[inline(always)]
fn encode(fmt: Format, x: f32) -> u32 {
    let m = fmt.man_bits;
    let shift = 23 - m;
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    let u = bits ^ sign;
    let emax = (fmt.max_finite() >> m) as i32 - fmt.bias;
    let overflow_at = pow2_bits(emax + 1);
    let min_normal = pow2_bits(1 - fmt.bias);
    let saturate = fmt.overflow == Overflow::Saturate;
    let over = match fmt.infinity() {
        Some(inf) if !saturate => inf,
        _ => fmt.max_finite(),
    };
    // Subnormal: the magic number's ulp is the smallest subnormal.
    let magic = pow2_bits(1 - fmt.bias - m as i32 + 23);
    let sub = (f32::from_bits(u) + f32::from_bits(magic)).to_bits().wrapping_sub(magic);
    // Normal: rebias, round, truncate.
    let odd = (u >> shift) & 1;
    let rebias = ((fmt.bias - 127) as u32) << 23;
    let mut normal = u.wrapping_add(rebias).wrapping_add((1 << (shift - 1)) - 1 + odd) >> shift;
    if saturate {
        normal = normal.min(fmt.max_finite());
    }
    let magnitude = if u < min_normal {
        sub
    } else if u < overflow_at {
        normal
    } else {
        over
    };
    let out_sign = sign >> (31 - fmt.exp_bits - m);
    if u > 0x7F80_0000 {
        // NaN: the canonical NaN with the sign, or +0 where there is none.
        if fmt.nan == Nan::None {
            0
        } else {
            fmt.canonical_nan() | out_sign
        }
    } else {
        magnitude | out_sign
    }
}

/// Decodes a narrow format whose magnitude bits are `mag` (sign removed):
/// the fields are moved into binary32's exponent/fraction position and
/// scaled by `2^(127 - bias)`, which is exact for normal and subnormal
/// values alike.
#[inline(always)]
fn widen(fmt: Format, mag: u32) -> f32 {
    let scale = f32::from_bits(pow2_bits(127 - fmt.bias));
    f32::from_bits(mag << (23 - fmt.man_bits)) * scale
}

/// `value` with the sign bit `sign` (0 or 1).
#[inline(always)]
fn signed(value: f32, sign: u32) -> f32 {
    f32::from_bits(value.to_bits() | sign << 31)
}

/// The value of a binary16 encoding (NaN payloads kept).
#[inline]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let mag = u32::from(bits & 0x7FFF);
    let finite = widen(F16, mag);
    let special = f32::from_bits(0x7F80_0000 | (mag & 0x3FF) << 13);
    signed(if mag >= 0x7C00 { special } else { finite }, u32::from(bits >> 15))
}

/// Binary16 encoding of `x`, rounded to nearest even.
#[inline]
pub(crate) fn f16_from_f32(x: f32) -> u16 {
    encode(F16, x) as u16
}

/// The value of an FP8 E4M3 encoding.
#[inline]
pub(crate) fn f8e4m3_to_f32(bits: u8) -> f32 {
    let mag = u32::from(bits & 0x7F);
    let value = if mag == 0x7F { f32::NAN } else { widen(E4M3, mag) };
    signed(value, u32::from(bits >> 7))
}

/// FP8 E4M3 encoding of `x`, rounded to nearest even, saturating to +-448.
#[inline]
pub(crate) fn f8e4m3_from_f32(x: f32) -> u8 {
    encode(E4M3, x) as u8
}

/// The value of an FP8 E5M2 encoding: binary16 with the low eight fraction
/// bits dropped.
#[inline]
pub(crate) fn f8e5m2_to_f32(bits: u8) -> f32 {
    f16_to_f32(u16::from(bits) << 8)
}

/// FP8 E5M2 encoding of `x`, rounded to nearest even; overflow gives
/// infinity.
#[inline]
pub(crate) fn f8e5m2_from_f32(x: f32) -> u8 {
    encode(E5M2, x) as u8
}

/// The value of an FP4 E2M1 encoding (the low nibble of `bits`).
#[inline]
pub(crate) fn f4e2m1_to_f32(bits: u8) -> f32 {
    signed(widen(E2M1, u32::from(bits & 0x7)), u32::from(bits >> 3 & 1))
}

/// FP4 E2M1 encoding of `x` (in the low nibble), rounded to nearest even,
/// saturating to +-6; NaN gives +0.
#[inline]
pub(crate) fn f4e2m1_from_f32(x: f32) -> u8 {
    encode(E2M1, x) as u8
}
