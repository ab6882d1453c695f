//! The fourteen element types as the host side of the built-ins sees them:
//! names, widths and classes (for argument sizes and checks), and which of
//! types.cl's functions convert one into another, by the fake backend's
//! rules (`dtype::convert` and `dtype::convert_trunc`).

/// What kind of number a type holds, which decides how conversions go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Float,
    Int,
    Bool,
}

/// One element type; its index in `DTYPES` is its `xdal_dtype_t` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DType {
    /// The name in kernel names and in types.cl (`f16_get`).
    pub name: &'static str,
    /// Bits an element takes in memory (`bool` a whole byte).
    pub bits: u32,
    pub class: Class,
}

const fn dtype(name: &'static str, bits: u32, class: Class) -> DType {
    DType { name, bits, class }
}

/// Every type, in ABI order (a test checks it against `xdal_dtype_t`).
pub(crate) const DTYPES: [DType; 14] = [
    dtype("f64", 64, Class::Float),
    dtype("f32", 32, Class::Float),
    dtype("f16", 16, Class::Float),
    dtype("bf16", 16, Class::Float),
    dtype("f8e4m3", 8, Class::Float),
    dtype("f8e5m2", 8, Class::Float),
    dtype("f4e2m1", 4, Class::Float),
    dtype("i64", 64, Class::Int),
    dtype("i32", 32, Class::Int),
    dtype("i16", 16, Class::Int),
    dtype("i8", 8, Class::Int),
    dtype("u8", 8, Class::Int),
    dtype("i4", 4, Class::Int),
    dtype("bool", 8, Class::Bool),
];

/// `DTYPES` index of f64 and of FP8 E4M3, the types conversions single out.
const F64: usize = 0;
const F8E4M3: usize = 4;

impl DType {
    /// Whether two elements share a byte, the lower index in the low nibble.
    pub const fn is_packed(self) -> bool {
        self.bits == 4
    }

    /// Bytes of a scalar argument: the storage size, one byte for a 4-bit
    /// value (in the low nibble).
    pub const fn scalar_bytes(self) -> usize {
        if self.is_packed() {
            1
        } else {
            (self.bits / 8) as usize
        }
    }

    /// The alignment the fake requires of an array of this type: its
    /// element size (a byte for packed types, which it does not check).
    pub const fn align(self) -> usize {
        self.scalar_bytes()
    }

    /// Bytes that `n` elements take (rounded up for packed types), or
    /// `None` when that does not fit in `usize`.
    pub fn bytes_for(self, n: u64) -> Option<usize> {
        let n = usize::try_from(n).ok()?;
        if self.is_packed() {
            Some(n / 2 + n % 2)
        } else {
            n.checked_mul(self.scalar_bytes())
        }
    }

    /// The units a dense kernel spreads over work items: elements, or
    /// bytes for packed types (so no two work items write one byte).
    pub fn units(self, n: usize) -> usize {
        if self.is_packed() {
            n.div_ceil(2)
        } else {
            n
        }
    }
}

/// The OpenCL C expression converting `x`, an `s` value, into a `d` value:
/// `cast_<s>_<d>`'s rule, or `cast_trunc_<s>_<d>`'s with `trunc`. As the
/// fake's `convert`: the bits for one type; through "is nonzero" when
/// either side is bool; through i64 from integers; through f32 from floats
/// of at most 32 bits (exact) and as f64 from f64. Truncation changes float
/// to integer (toward zero) and anything to E4M3 (overflow to NaN).
pub(crate) fn convert_expr(s: usize, d: usize, trunc: bool) -> String {
    let (sn, dn) = (DTYPES[s].name, DTYPES[d].name);
    if s == d {
        return "(x)".into();
    }
    let to_e4m3 = trunc && d == F8E4M3;
    match (DTYPES[s].class, DTYPES[d].class) {
        (Class::Bool, _) | (_, Class::Bool) => format!("{dn}_from_bool({sn}_nonzero(x))"),
        (Class::Int, _) if to_e4m3 => format!("f8e4m3_trunc_i64({sn}_to_i64(x))"),
        (Class::Int, _) => format!("{dn}_from_i64({sn}_to_i64(x))"),
        (Class::Float, Class::Int) if trunc && s == F64 => format!("{dn}_trunc_f64(x)"),
        (Class::Float, Class::Int) if trunc => format!("{dn}_trunc_f64((double){sn}_to_f32(x))"),
        (Class::Float, _) if to_e4m3 && s == F64 => "f8e4m3_trunc_f64(x)".into(),
        (Class::Float, _) if to_e4m3 => format!("f8e4m3_trunc_f32({sn}_to_f32(x))"),
        (Class::Float, _) if s == F64 => format!("{dn}_from_f64(x)"),
        (Class::Float, _) => format!("{dn}_from_f32({sn}_to_f32(x))"),
    }
}
