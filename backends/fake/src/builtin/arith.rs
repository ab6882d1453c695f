//! The arithmetic of the built-in kernels: each element type computes in an
//! accumulator type (`f32` for the floats narrower than `f32`, the type
//! itself for `f32`, `f64` and the integers, `i8` for `i4`, `bool` for
//! bool) and rounds or wraps back to the element type.
use crate::dtype::{Bool, Elem, F4E2M1, F8E4M3, F8E5M2, I4};
use half::{bf16, f16};

/// A type the kernels add and multiply in.
pub(crate) trait Acc: Copy + Send + Sync + 'static {
    /// Zero: what an empty sum or a zero-length dot product gives.
    const ZERO: Self;
    /// Where sums start: `-0.0` for floats, so that a sum of negative zeros
    /// stays `-0.0` as IEEE addition would have it; `ZERO` otherwise.
    const IDENTITY: Self;
    /// `self + other`: IEEE for floats, wrapping for integers, or for bool.
    fn add(self, other: Self) -> Self;
    /// `self * other`: IEEE for floats, wrapping for integers, and for bool.
    fn mul(self, other: Self) -> Self;
}

impl Acc for f32 {
    const ZERO: Self = 0.0;
    const IDENTITY: Self = -0.0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn mul(self, other: Self) -> Self {
        self * other
    }
}

impl Acc for f64 {
    const ZERO: Self = 0.0;
    const IDENTITY: Self = -0.0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn mul(self, other: Self) -> Self {
        self * other
    }
}

/// Implements `Acc` for an integer type, wrapping.
macro_rules! int_acc {
    ($($t:ty),*) => {$(
        impl Acc for $t {
            const ZERO: Self = 0;
            const IDENTITY: Self = 0;
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    )*};
}
int_acc!(i64, i32, i16, i8, u8);

impl Acc for bool {
    const ZERO: Self = false;
    const IDENTITY: Self = false;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self | other
    }
    #[inline(always)]
    fn mul(self, other: Self) -> Self {
        self & other
    }
}

/// An element type with its accumulator.
pub(crate) trait Arith: Elem {
    /// What this type computes in.
    type Acc: Acc;
    /// The value in the accumulator type (exact).
    fn to_acc(self) -> Self::Acc;
    /// An accumulator value rounded (nearest even) or wrapped back.
    fn from_acc(acc: Self::Acc) -> Self;
    /// Whether `gemm` does the work (`f32`, `f64`).
    const GEMM: bool = false;
    /// `c[m,n] = a[m,k] * b[k,n]`, row-major with row strides `k`, `n` and
    /// `n`, by an optimised GEMM where the type has one (`GEMM`): false,
    /// with nothing done, where it has none.
    ///
    /// # Safety
    /// `a`, `b` and `c` valid for `m*k`, `k*n` and `m*n` elements; `c`
    /// overlaps neither.
    #[inline(always)]
    unsafe fn gemm(_a: *const Self, _b: *const Self, _c: *mut Self, _m: usize, _n: usize, _k: usize) -> bool {
        false
    }
}

/// `true`, for a type that names a GEMM (the repetition needs the name).
macro_rules! has_gemm {
    ($gemm:path) => {
        true
    };
}

/// Implements `Arith` for types that are their own accumulator, with a
/// GEMM of `matrixmultiply` (its `sgemm` or `dgemm`) where one is named.
macro_rules! self_arith {
    ($($t:ty $(=> $gemm:path)?),*) => {$(
        impl Arith for $t {
            type Acc = $t;
            $(const GEMM: bool = has_gemm!($gemm);)?
            #[inline(always)]
            fn to_acc(self) -> Self::Acc {
                self
            }
            #[inline(always)]
            fn from_acc(acc: Self::Acc) -> Self {
                acc
            }
            $(
            unsafe fn gemm(a: *const Self, b: *const Self, c: *mut Self, m: usize, n: usize, k: usize) -> bool {
                // Row strides fit isize: each matrix is one allocation.
                let (k_stride, n_stride) = (k as isize, n as isize);
                // SAFETY: per the contract; beta 0 writes `c` without
                // reading it.
                unsafe { $gemm(m, k, n, 1.0, a, k_stride, 1, b, n_stride, 1, 0.0, c, n_stride, 1) };
                true
            }
            )?
        }
    )*};
}
self_arith!(f64 => matrixmultiply::dgemm, f32 => matrixmultiply::sgemm, i64, i32, i16, i8, u8);

/// Implements `Arith` for the floats narrower than `f32`: they widen to
/// `f32` exactly and one rounding brings a result back. For a single add or
/// multiply this equals the correctly rounded result in the narrow type,
/// since `f32` has at least twice their precision plus two bits.
macro_rules! narrow_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            type Acc = f32;
            #[inline(always)]
            fn to_acc(self) -> f32 {
                Elem::to_f32(self)
            }
            #[inline(always)]
            fn from_acc(acc: f32) -> Self {
                <$t as Elem>::from_f32(acc)
            }
        }
    )*};
}
narrow_arith!(f16, bf16, F8E4M3, F8E5M2, F4E2M1);

impl Arith for I4 {
    // Wrapping in 8 bits and truncating to 4 equals wrapping in 4 bits.
    type Acc = i8;
    #[inline(always)]
    fn to_acc(self) -> i8 {
        self.0
    }
    #[inline(always)]
    fn from_acc(acc: i8) -> Self {
        I4::from_i64(i64::from(acc))
    }
}

impl Arith for Bool {
    type Acc = bool;
    #[inline(always)]
    fn to_acc(self) -> bool {
        self.is_nonzero()
    }
    #[inline(always)]
    fn from_acc(acc: bool) -> Self {
        Bool::from_bool(acc)
    }
}

/// An elementwise binary operation.
pub(crate) trait BinOp: 'static {
    /// The kernel name's prefix.
    const NAME: &'static str;
    /// The operation in accumulator arithmetic.
    fn apply<A: Acc>(a: A, b: A) -> A;
}

/// `add_<t>`.
pub(crate) struct Add;
/// `mul_<t>`.
pub(crate) struct Mul;

impl BinOp for Add {
    const NAME: &'static str = "add";
    #[inline(always)]
    fn apply<A: Acc>(a: A, b: A) -> A {
        a.add(b)
    }
}

impl BinOp for Mul {
    const NAME: &'static str = "mul";
    #[inline(always)]
    fn apply<A: Acc>(a: A, b: A) -> A {
        a.mul(b)
    }
}
