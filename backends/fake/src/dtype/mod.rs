//! Element types of the built-in kernels and their conversions.
//!
//! `DType` names the fourteen ABI types; `minifloat` decodes the narrow float
//! formats exactly and encodes them with round-to-nearest-even; `formats`
//! holds the concrete formats (F16, BF16, OCP F8 E4M3 / E5M2, F4 E2M1);
//! `fast` has branch-free `f32` conversions for them, for the kernels' loops;
//! `int` holds the integer rules (round to nearest even, saturate, wrap);
//! `elem` gives each type a Rust value type and the conversions between any
//! two of them, which the cast kernels use; `trunc` has the C-style
//! conversions (truncation toward zero, E4M3 overflow to NaN) of the
//! truncating casts.

mod elem;
mod fast;
mod formats;
mod int;
mod minifloat;
#[cfg(test)]
mod tests_elem;
#[cfg(test)]
mod tests_float;
#[cfg(test)]
pub(crate) mod tests_trunc;
mod trunc;

pub(crate) use elem::{convert, Bool, Elem, F4E2M1, F8E4M3, F8E5M2, I4};
pub(crate) use trunc::{convert_trunc, trunc_differs};

/// One of the fourteen element types, numbered as `xdal_dtype_t` (a test
/// checks the numbering).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DType {
    /// IEEE binary64.
    F64 = 0,
    /// IEEE binary32.
    F32 = 1,
    /// IEEE binary16.
    F16 = 2,
    /// bfloat16.
    BF16 = 3,
    /// OCP FP8 E4M3 (no infinities, saturating).
    F8E4M3 = 4,
    /// OCP FP8 E5M2 (IEEE-like).
    F8E5M2 = 5,
    /// OCP FP4 E2M1 (no infinity or NaN, saturating), two a byte.
    F4E2M1 = 6,
    /// 64-bit signed integer.
    I64 = 7,
    /// 32-bit signed integer.
    I32 = 8,
    /// 16-bit signed integer.
    I16 = 9,
    /// 8-bit signed integer.
    I8 = 10,
    /// 8-bit unsigned integer.
    U8 = 11,
    /// 4-bit signed integer, two a byte.
    I4 = 12,
    /// One byte, 0 or 1.
    Bool = 13,
}

/// What kind of number a type holds, which decides how conversions go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// A binary floating-point format.
    Float,
    /// A two's complement (or unsigned) integer.
    Int,
    /// `bool`: 0 or 1.
    Bool,
}

impl DType {
    /// Every type, in ABI order.
    pub const ALL: [DType; 14] = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F4E2M1,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::I4,
        DType::Bool,
    ];

    /// The lower-case name that built-in kernel names use (`fill_<name>`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::F4E2M1 => "f4e2m1",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I4 => "i4",
            DType::Bool => "bool",
        }
    }

    /// Bits one element occupies in memory (`bool` takes a whole byte).
    pub const fn bits(self) -> u32 {
        match self {
            DType::F64 | DType::I64 => 64,
            DType::F32 | DType::I32 => 32,
            DType::F16 | DType::BF16 | DType::I16 => 16,
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::U8 | DType::Bool => 8,
            DType::F4E2M1 | DType::I4 => 4,
        }
    }

    /// Whether two elements share a byte, the one with the lower index in
    /// the low nibble.
    pub const fn is_packed(self) -> bool {
        matches!(self, DType::F4E2M1 | DType::I4)
    }

    /// The size of a scalar kernel argument of this type: its storage size,
    /// except that a 4-bit value travels as one byte (value in the low
    /// nibble).
    pub const fn scalar_bytes(self) -> usize {
        if self.is_packed() {
            1
        } else {
            (self.bits() / 8) as usize
        }
    }

    /// Bytes that `n` elements occupy (rounded up for packed types), or
    /// `None` when that does not fit in `usize`.
    pub fn bytes_for(self, n: u64) -> Option<usize> {
        let n = usize::try_from(n).ok()?;
        if self.is_packed() {
            Some(n / 2 + n % 2)
        } else {
            n.checked_mul(self.scalar_bytes())
        }
    }

    /// Floats, integers or bool.
    pub const fn class(self) -> Class {
        match self {
            DType::F64 | DType::F32 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 | DType::F4E2M1 => {
                Class::Float
            }
            DType::Bool => Class::Bool,
            _ => Class::Int,
        }
    }

    /// The bit of this type in `dtype_mask`.
    pub const fn mask_bit(self) -> u64 {
        1 << self as u32
    }
}

/// Invokes `$m!(T)` once for each of the fourteen value types, in ABI
/// order, so that code generic over `Elem` can be instantiated for all of
/// them without spelling out the list again.
macro_rules! for_each_elem {
    ($m:ident) => {
        $m!(f64);
        $m!(f32);
        $m!(half::f16);
        $m!(half::bf16);
        $m!($crate::dtype::F8E4M3);
        $m!($crate::dtype::F8E5M2);
        $m!($crate::dtype::F4E2M1);
        $m!(i64);
        $m!(i32);
        $m!(i16);
        $m!(i8);
        $m!(u8);
        $m!($crate::dtype::I4);
        $m!($crate::dtype::Bool);
    };
}
pub(crate) use for_each_elem;
