//! The conversions of `cast_trunc_<s>_<d>`: C's `static_cast`, which is what
//! PyTorch's `to(dtype)` does, where it differs from `convert`.
//!
//! - Float to integer truncates toward zero. Where C leaves the result
//!   undefined (NaN, out of range) it is defined here as `convert` does it:
//!   NaN gives 0 and values beyond the type's range saturate.
//! - To FP8 E4M3, from a float or an integer, a value whose magnitude rounds
//!   beyond 448 is NaN (`S.1111.111`) instead of saturating, as PyTorch's
//!   `float8_e4m3fn` conversion does; infinities become NaN too.
//! - Everything else is `convert`.
use super::elem::{convert, Elem};
use super::int::{f64_to_int_trunc, f64_to_small_int_trunc};
use super::{Class, DType};

/// Magnitudes above this round past E4M3's largest finite value, 448, to
/// where 480 would be (the NaN encoding). 464 itself is the tie between
/// 448 and 480 and goes to 448, whose fraction is even.
const E4M3_LIMIT: f64 = 464.0;

/// E4M3's NaN without its sign.
const E4M3_NAN: u64 = 0x7F;

/// `s` converted to `D` the way `static_cast` (and PyTorch) does; see the
/// module comment.
#[inline]
pub(crate) fn convert_trunc<S: Elem, D: Elem>(s: S) -> D {
    if S::DTYPE == D::DTYPE {
        return D::from_bits(s.to_bits());
    }
    match (S::DTYPE.class(), D::DTYPE.class()) {
        (Class::Float, Class::Int) => {
            // Exact: every float type widens to f64 without rounding.
            let x = if S::DTYPE.bits() <= 32 { f64::from(s.to_f32()) } else { s.to_f64() };
            let (min, max) = int_range(D::DTYPE);
            let v = if D::DTYPE.bits() <= 32 {
                i64::from(f64_to_small_int_trunc(x, min as i32, max as i32))
            } else {
                f64_to_int_trunc(x, min, max)
            };
            D::from_i64(v)
        }
        (Class::Float, _) if D::DTYPE == DType::F8E4M3 => {
            let (in_range, negative) = if S::DTYPE.bits() <= 32 {
                let x = s.to_f32();
                (x.abs() <= E4M3_LIMIT as f32, x.is_sign_negative())
            } else {
                let x = s.to_f64();
                (x.abs() <= E4M3_LIMIT, x.is_sign_negative())
            };
            // `!(x <= limit)` also holds for NaN, which stays NaN.
            if in_range {
                convert(s)
            } else {
                D::from_bits(E4M3_NAN | u64::from(negative) << 7)
            }
        }
        (Class::Int, _) if D::DTYPE == DType::F8E4M3 => {
            let v = s.to_i64();
            if v.unsigned_abs() as f64 <= E4M3_LIMIT {
                convert(s)
            } else {
                D::from_bits(E4M3_NAN | u64::from(v < 0) << 7)
            }
        }
        _ => convert(s),
    }
}

/// The value range of an integer type (unused for the others).
const fn int_range(d: DType) -> (i64, i64) {
    match d {
        DType::I64 => (i64::MIN, i64::MAX),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::I16 => (i16::MIN as i64, i16::MAX as i64),
        DType::I8 => (i8::MIN as i64, i8::MAX as i64),
        DType::U8 => (0, u8::MAX as i64),
        DType::I4 => (-8, 7),
        _ => (0, 0),
    }
}

/// Whether `convert_trunc` differs from `convert` for some value from `s`
/// to `d`: float to integer, and to E4M3 from the types that reach beyond
/// 464. Elsewhere the truncating kernels can be the rounding ones.
pub(crate) const fn trunc_differs(s: DType, d: DType) -> bool {
    let float_to_int = matches!(s.class(), Class::Float) && matches!(d.class(), Class::Int);
    // E2M1 (6), the 4- and 8-bit integers (255 at most), bool and E4M3
    // itself never overflow E4M3.
    let small = matches!(s, DType::F8E4M3 | DType::F4E2M1 | DType::I8 | DType::U8 | DType::I4 | DType::Bool);
    float_to_int || (matches!(d, DType::F8E4M3) && !small)
}
