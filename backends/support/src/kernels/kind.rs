//! The thirteen kinds of built-in kernel, their names and argument layouts
//! (the fake's `builtin::build`).
use super::dtype::DType;
use super::ArgKind;

/// A kind of built-in kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Fill,
    Add,
    Mul,
    Sum,
    Matmul,
    CopyStrided,
    FillStrided,
    Axpby,
    SumDim,
    Cast,
    CastTrunc,
    CastStrided,
    CastStridedTrunc,
}

/// The kernels of one type, in the fake's order: the 1.0 ones, then 1.1.
pub(crate) const PER_TYPE_1_0: [Kind; 5] = [Kind::Fill, Kind::Add, Kind::Mul, Kind::Sum, Kind::Matmul];
pub(crate) const PER_TYPE_1_1: [Kind; 4] = [Kind::CopyStrided, Kind::FillStrided, Kind::Axpby, Kind::SumDim];
/// The kernels of one pair of types since 1.1 (1.0 has `Cast` alone).
pub(crate) const PER_PAIR_1_1: [Kind; 3] = [Kind::CastTrunc, Kind::CastStrided, Kind::CastStridedTrunc];

/// Pointers, counts and the 128-byte shape arrays.
const PTR: (ArgKind, usize) = (ArgKind::Pointer, 8);
const U64: (ArgKind, usize) = (ArgKind::Value, 8);
const DIMS: (ArgKind, usize) = (ArgKind::Value, 128);

impl Kind {
    /// Whether the kernel is named for a pair of types.
    pub fn is_pair(self) -> bool {
        matches!(self, Kind::Cast | Kind::CastTrunc | Kind::CastStrided | Kind::CastStridedTrunc)
    }

    fn prefix(self) -> &'static str {
        match self {
            Kind::Fill => "fill",
            Kind::Add => "add",
            Kind::Mul => "mul",
            Kind::Sum => "sum",
            Kind::Matmul => "matmul",
            Kind::CopyStrided => "copy_strided",
            Kind::FillStrided => "fill_strided",
            Kind::Axpby => "axpby",
            Kind::SumDim => "sum_dim",
            Kind::Cast => "cast",
            Kind::CastTrunc => "cast_trunc",
            Kind::CastStrided => "cast_strided",
            Kind::CastStridedTrunc => "cast_strided_trunc",
        }
    }

    /// The kernel's name for types `s` and `d` (`d` unused but for pairs).
    pub fn name(self, s: DType, d: DType) -> String {
        if self.is_pair() {
            format!("{}_{}_{}", self.prefix(), s.name, d.name)
        } else {
            format!("{}_{}", self.prefix(), s.name)
        }
    }

    /// The kernel's arguments, as docs/kernels.md lists them.
    pub fn args(self, t: DType) -> Vec<(ArgKind, usize)> {
        let scalar = (ArgKind::Value, t.scalar_bytes());
        match self {
            Kind::Fill => vec![PTR, U64, scalar],
            Kind::Add | Kind::Mul => vec![PTR, PTR, PTR, U64],
            Kind::Sum | Kind::Cast | Kind::CastTrunc => vec![PTR, PTR, U64],
            Kind::Matmul => vec![PTR, PTR, PTR, U64, U64, U64],
            Kind::CopyStrided | Kind::CastStrided | Kind::CastStridedTrunc => vec![PTR, PTR, U64, DIMS, DIMS, DIMS],
            Kind::FillStrided => vec![PTR, U64, DIMS, DIMS, scalar],
            Kind::Axpby => vec![PTR, PTR, PTR, U64, scalar, scalar],
            Kind::SumDim => vec![PTR, PTR, U64, U64, U64],
        }
    }
}
