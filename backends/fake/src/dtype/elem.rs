//! One Rust value type per element type, and conversion between any two.
//!
//! The value types have the storage layout of their element type, except
//! the packed ones (`F4E2M1`, `I4`), whose value is one nibble and whose
//! storage is shared two a byte; the kernels pack and unpack those.
use super::fast::{
    f16_from_f32, f16_to_f32, f4e2m1_from_f32, f4e2m1_to_f32, f8e4m3_from_f32, f8e4m3_to_f32, f8e5m2_from_f32,
    f8e5m2_to_f32,
};
use super::formats::{bf16_from_f64, f16_from_f64, f4e2m1_from_f64, f8e4m3_from_f64, f8e5m2_from_f64};
use super::int::{f64_to_int, f64_to_small_int, i4_from_nibble, i64_to_f64_odd, wrap_i4};
use super::{Class, DType};
use half::{bf16, f16};
use std::mem::size_of;

/// An OCP FP8 E4M3 value, as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct F8E4M3(pub u8);

/// An OCP FP8 E5M2 value, as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct F8E5M2(pub u8);

/// An OCP FP4 E2M1 value, as its bits in the low nibble.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct F4E2M1(pub u8);

/// A signed 4-bit integer, -8 to 7, sign-extended into an `i8`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct I4(pub i8);

/// A `bool` element: one byte. Any nonzero byte reads as true; the kernels
/// write 0 or 1. (Not Rust's `bool`, for which other bytes would be
/// undefined behaviour.)
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bool(pub u8);

/// The value type of one element type.
pub(crate) trait Elem: Copy + Default + Send + Sync + 'static {
    /// Which element type this is.
    const DTYPE: DType;

    /// The storage bits (the nibble for packed types), zero-extended.
    fn to_bits(self) -> u64;
    /// The value with storage bits `bits` (higher bits ignored).
    fn from_bits(bits: u64) -> Self;

    /// As `f32`: exact for float types no wider than `f32`, rounded to
    /// nearest even for the others; bool gives 0 or 1.
    fn to_f32(self) -> f32;
    /// As `f64`: exact for every float type and for integers up to 2^53;
    /// wider `i64` values round to odd (see `i64_to_f64_odd`).
    fn to_f64(self) -> f64;
    /// As `i64`: exact for integers; bool gives 0 or 1; floats round to
    /// nearest even and saturate, NaN giving 0.
    fn to_i64(self) -> i64;
    /// Whether the value is not zero (NaN counts as not zero).
    fn is_nonzero(self) -> bool;

    /// From `f32`, rounded to nearest even (floats), or rounded and
    /// saturated (integers, NaN giving 0), or `x != 0` (bool).
    fn from_f32(x: f32) -> Self;
    /// From `f64`, with the same rules as `from_f32`.
    fn from_f64(x: f64) -> Self;
    /// From `i64`: integers wrap, floats round once to nearest even, bool is
    /// `x != 0`.
    fn from_i64(x: i64) -> Self;
    /// 1 or 0 of this type.
    fn from_bool(b: bool) -> Self;

    /// The value as the kernels write it: 0 or 1 for bool, itself otherwise.
    fn canonical(self) -> Self {
        self
    }

    /// Reads a scalar kernel argument: `DTYPE.scalar_bytes()` bytes at `p`,
    /// in native byte order (the low nibble of one byte for packed types).
    ///
    /// # Safety
    /// `p` must point to that many readable bytes (any alignment).
    unsafe fn read_scalar(p: *const u8) -> Self {
        // SAFETY: the caller guarantees `scalar_bytes()` readable bytes at
        // `p`; `read_unaligned` accepts any alignment.
        let bits = unsafe {
            match Self::DTYPE.scalar_bytes() {
                8 => p.cast::<u64>().read_unaligned(),
                4 => u64::from(p.cast::<u32>().read_unaligned()),
                2 => u64::from(p.cast::<u16>().read_unaligned()),
                _ => u64::from(p.read()),
            }
        };
        Self::from_bits(bits)
    }
}

/// `s` converted to `D`: bits unchanged for the same type; through 0/1 when
/// either side is bool; through `i64` from integers (wrapping or rounding
/// once); through `f32` or `f64` from floats (exact, then rounded once).
#[inline]
pub(crate) fn convert<S: Elem, D: Elem>(s: S) -> D {
    if S::DTYPE == D::DTYPE {
        return D::from_bits(s.to_bits());
    }
    match (S::DTYPE.class(), D::DTYPE.class()) {
        (Class::Bool, _) | (_, Class::Bool) => D::from_bool(s.is_nonzero()),
        (Class::Int, _) => D::from_i64(s.to_i64()),
        // The f32 path is exact into f32 and rounds once from there; it is
        // the fast one for the narrow formats.
        (Class::Float, _) if S::DTYPE.bits() <= 32 => D::from_f32(s.to_f32()),
        (Class::Float, _) => D::from_f64(s.to_f64()),
    }
}

/// Implements `Elem` for a native integer type.
macro_rules! int_elem {
    ($t:ty, $u:ty, $dtype:ident) => {
        impl Elem for $t {
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_bits(self) -> u64 {
                u64::from(self as $u)
            }
            #[inline]
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            #[inline]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline]
            fn to_f64(self) -> f64 {
                i64_to_f64_odd(self as i64)
            }
            #[inline]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline]
            fn is_nonzero(self) -> bool {
                self != 0
            }
            #[inline]
            fn from_f32(x: f32) -> Self {
                Self::from_f64(f64::from(x))
            }
            #[inline]
            fn from_f64(x: f64) -> Self {
                if size_of::<$t>() <= 4 {
                    f64_to_small_int(x, <$t>::MIN as i32, <$t>::MAX as i32) as $t
                } else {
                    f64_to_int(x, <$t>::MIN as i64, <$t>::MAX as i64) as $t
                }
            }
            #[inline]
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            #[inline]
            fn from_bool(b: bool) -> Self {
                <$t>::from(b)
            }
        }
    };
}

int_elem!(i64, u64, I64);
int_elem!(i32, u32, I32);
int_elem!(i16, u16, I16);
int_elem!(i8, u8, I8);
int_elem!(u8, u8, U8);

/// Implements `Elem` for a float format stored as `$t(u8)` or a `half`
/// type, given its decoder to `f32` and encoders from `f32` and `f64`.
macro_rules! float_elem {
    ($t:ty, $dtype:ident, $mask:expr, |$b:ident| $make:expr, |$v:ident| $bits:expr,
     $to_f32:expr, $from_f32:expr, $from_f64:expr) => {
        // Paths below name `Elem` explicitly: `half`'s types have inherent
        // methods of the same names (`from_f64` rounds twice), which a
        // plain `Self::` path would pick.
        impl Elem for $t {
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_bits(self) -> u64 {
                let $v = self;
                u64::from($bits)
            }
            #[inline]
            fn from_bits(bits: u64) -> Self {
                let $b = bits;
                $make
            }
            #[inline]
            fn to_f32(self) -> f32 {
                ($to_f32)(self)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                f64::from(<Self as Elem>::to_f32(self))
            }
            #[inline]
            fn to_i64(self) -> i64 {
                f64_to_int(<Self as Elem>::to_f64(self), i64::MIN, i64::MAX)
            }
            #[inline]
            fn is_nonzero(self) -> bool {
                // Every bit but the sign: NaN patterns are nonzero too.
                <Self as Elem>::to_bits(self) & $mask != 0
            }
            #[inline]
            fn from_f32(x: f32) -> Self {
                ($from_f32)(x)
            }
            #[inline]
            fn from_f64(x: f64) -> Self {
                ($from_f64)(x)
            }
            #[inline]
            fn from_i64(x: i64) -> Self {
                <Self as Elem>::from_f64(i64_to_f64_odd(x))
            }
            #[inline]
            fn from_bool(b: bool) -> Self {
                <Self as Elem>::from_f32(f32::from(u8::from(b)))
            }
        }
    };
}

float_elem!(
    f16,
    F16,
    0x7FFF,
    |b| f16::from_bits(b as u16),
    |v| v.to_bits(),
    |v: f16| f16_to_f32(v.to_bits()),
    |x| f16::from_bits(f16_from_f32(x)),
    f16_from_f64
);
float_elem!(
    bf16,
    BF16,
    0x7FFF,
    |b| bf16::from_bits(b as u16),
    |v| v.to_bits(),
    |v: bf16| v.to_f32(),
    bf16::from_f32,
    bf16_from_f64
);
float_elem!(
    F8E4M3,
    F8E4M3,
    0x7F,
    |b| F8E4M3(b as u8),
    |v| v.0,
    |v: F8E4M3| f8e4m3_to_f32(v.0),
    |x| F8E4M3(f8e4m3_from_f32(x)),
    |x| F8E4M3(f8e4m3_from_f64(x))
);
float_elem!(
    F8E5M2,
    F8E5M2,
    0x7F,
    |b| F8E5M2(b as u8),
    |v| v.0,
    |v: F8E5M2| f8e5m2_to_f32(v.0),
    |x| F8E5M2(f8e5m2_from_f32(x)),
    |x| F8E5M2(f8e5m2_from_f64(x))
);
float_elem!(
    F4E2M1,
    F4E2M1,
    0x7,
    |b| F4E2M1(b as u8 & 0xF),
    |v| v.0,
    |v: F4E2M1| f4e2m1_to_f32(v.0),
    |x| F4E2M1(f4e2m1_from_f32(x)),
    |x| F4E2M1(f4e2m1_from_f64(x))
);

impl Elem for f32 {
    const DTYPE: DType = DType::F32;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn to_i64(self) -> i64 {
        f64_to_int(f64::from(self), i64::MIN, i64::MAX)
    }
    #[inline]
    fn is_nonzero(self) -> bool {
        self != 0.0
    }
    #[inline]
    fn from_f32(x: f32) -> Self {
        x
    }
    #[inline]
    fn from_f64(x: f64) -> Self {
        // Rust's `as` rounds to nearest even here.
        x as f32
    }
    #[inline]
    fn from_i64(x: i64) -> Self {
        // Rust's `as` rounds to nearest even: one rounding.
        x as f32
    }
    #[inline]
    fn from_bool(b: bool) -> Self {
        f32::from(u8::from(b))
    }
}

impl Elem for f64 {
    const DTYPE: DType = DType::F64;
    #[inline]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn to_i64(self) -> i64 {
        f64_to_int(self, i64::MIN, i64::MAX)
    }
    #[inline]
    fn is_nonzero(self) -> bool {
        self != 0.0
    }
    #[inline]
    fn from_f32(x: f32) -> Self {
        f64::from(x)
    }
    #[inline]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline]
    fn from_i64(x: i64) -> Self {
        x as f64
    }
    #[inline]
    fn from_bool(b: bool) -> Self {
        f64::from(u8::from(b))
    }
}

impl Elem for I4 {
    const DTYPE: DType = DType::I4;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(self.0 as u8 & 0xF)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        I4(i4_from_nibble(bits as u8 & 0xF))
    }
    #[inline]
    fn to_f32(self) -> f32 {
        f32::from(self.0)
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self.0)
    }
    #[inline]
    fn to_i64(self) -> i64 {
        i64::from(self.0)
    }
    #[inline]
    fn is_nonzero(self) -> bool {
        self.0 != 0
    }
    #[inline]
    fn from_f32(x: f32) -> Self {
        Self::from_f64(f64::from(x))
    }
    #[inline]
    fn from_f64(x: f64) -> Self {
        I4(f64_to_small_int(x, -8, 7) as i8)
    }
    #[inline]
    fn from_i64(x: i64) -> Self {
        I4(wrap_i4(x))
    }
    #[inline]
    fn from_bool(b: bool) -> Self {
        I4(i8::from(b))
    }
}

impl Elem for Bool {
    const DTYPE: DType = DType::Bool;
    #[inline]
    fn to_bits(self) -> u64 {
        u64::from(self.0)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        Bool(bits as u8)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        f32::from(u8::from(self.is_nonzero()))
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self.is_nonzero()))
    }
    #[inline]
    fn to_i64(self) -> i64 {
        i64::from(self.is_nonzero())
    }
    #[inline]
    fn is_nonzero(self) -> bool {
        self.0 != 0
    }
    #[inline]
    fn from_f32(x: f32) -> Self {
        Self::from_bool(x != 0.0)
    }
    #[inline]
    fn from_f64(x: f64) -> Self {
        Self::from_bool(x != 0.0)
    }
    #[inline]
    fn from_i64(x: i64) -> Self {
        Self::from_bool(x != 0)
    }
    #[inline]
    fn from_bool(b: bool) -> Self {
        Bool(u8::from(b))
    }
    #[inline]
    fn canonical(self) -> Self {
        Self::from_bool(self.is_nonzero())
    }
}
