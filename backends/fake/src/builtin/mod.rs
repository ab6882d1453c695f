//! The built-in kernels that `xdal_module_get_builtin` returns for all
//! fourteen element types, written once, generically, and instantiated per
//! type: since 1.0 `fill_<t>`, `cast_<s>_<d>`, `add_<t>`, `mul_<t>`,
//! `sum_<t>` and `matmul_<t>` (ABI.md, "Built-in kernels"); since 1.1
//! `cast_trunc_<s>_<d>`, the strided `copy_strided_<t>`,
//! `cast_strided_<s>_<d>`, `cast_strided_trunc_<s>_<d>` and
//! `fill_strided_<t>`, `axpby_<t>` and `sum_dim_<t>` (docs/kernels.md).
//!
//! Every kernel takes the `xdal_host_kernel_t` signature and is called once
//! per block, blocks possibly in parallel: whatever the grid, each block
//! takes a contiguous share of the work (see `grid::Block::share`), so all
//! elements are covered exactly once. A kernel returns a failure status
//! (which makes the launch fail) for NULL arrays, sizes that overflow,
//! misaligned arrays, and overlaps it does not support; never a panic.

mod arith;
mod axpby;
mod cast;
mod elementwise;
mod grid;
mod matmul;
mod memory;
mod streaming;
mod strided;
mod sum;
mod sum_dim;
#[cfg(test)]
mod tests;

use crate::dtype::{for_each_elem, trunc_differs, DType, Elem};
use arith::{Add, Arith, BinOp, Mul};
use cast::{Conversion, Nearest, Trunc};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::OnceLock;
use xdal_abi::{xdal_kernel_context_t, xdal_status_raw};
use xdal_backend_support::strided::DIMS_BYTES;
use xdal_backend_support::Catalogue;

/// The signature of every kernel (`xdal_host_kernel_t`, not optional).
pub(crate) type Kernel = unsafe extern "C" fn(*const xdal_kernel_context_t, *const *mut c_void) -> xdal_status_raw;

/// One built-in kernel.
pub(crate) struct Builtin {
    /// Its name, e.g. `"cast_f32_bf16"`.
    pub name: String,
    /// The kernel.
    pub kernel: Kernel,
    /// The exact byte size of each argument, in order: a launch with other
    /// sizes is `XDAL_ERROR_INVALID_VALUE`.
    pub arg_sizes: Vec<usize>,
}

/// Pointers cross the ABI as 8 bytes.
const PTR: usize = 8;
/// `uint64_t` counts.
const U64: usize = 8;

/// All built-in kernels, in a fixed order, with an index by name; built
/// on first use.
fn registry() -> &'static Catalogue<Builtin> {
    static REGISTRY: OnceLock<Catalogue<Builtin>> = OnceLock::new();
    REGISTRY.get_or_init(|| Catalogue::new(build(), |b| &b.name))
}

/// The built-in kernel called `name`, if there is one.
pub(crate) fn find(name: &str) -> Option<&'static Builtin> {
    registry().find(name)
}

/// Every built-in kernel: the 1.0 ones first (per type in ABI order fill,
/// add, mul, sum, matmul; then the casts, by source type, then by
/// destination type), then the 1.1 ones in the same arrangement (per type
/// copy_strided, fill_strided, axpby, sum_dim; then per pair cast_trunc,
/// cast_strided, cast_strided_trunc).
// For listings (tests, tools); the launch path only needs `find`.
pub(crate) fn all() -> impl Iterator<Item = &'static Builtin> {
    registry().iter()
}

/// `dtype_mask` of the device properties: bit `1 << dtype` for each type
/// the built-in kernels handle, which is all fourteen.
pub(crate) fn dtype_mask() -> u64 {
    DType::ALL.iter().fold(0, |mask, d| mask | d.mask_bit())
}

/// Instantiates every kernel.
fn build() -> Vec<Builtin> {
    let mut list = Vec::new();
    macro_rules! per_type {
        ($t:ty) => {
            per_type::<$t>(&mut list);
        };
    }
    for_each_elem!(per_type);
    macro_rules! casts_from {
        ($t:ty) => {
            casts_from::<$t>(&mut list);
        };
    }
    for_each_elem!(casts_from);
    macro_rules! per_type_1_1 {
        ($t:ty) => {
            per_type_1_1::<$t>(&mut list);
        };
    }
    for_each_elem!(per_type_1_1);
    macro_rules! casts_from_1_1 {
        ($t:ty) => {
            casts_from_1_1::<$t>(&mut list);
        };
    }
    for_each_elem!(casts_from_1_1);
    list
}

/// A kernel named `name` taking arguments of `arg_sizes` bytes.
fn entry(name: String, kernel: Kernel, arg_sizes: &[usize]) -> Builtin {
    Builtin { name, kernel, arg_sizes: arg_sizes.to_vec() }
}

/// The 1.0 kernels of one type, casts aside.
fn per_type<E: Arith>(list: &mut Vec<Builtin>) {
    let t = E::DTYPE.name();
    let scalar = E::DTYPE.scalar_bytes();
    list.push(entry(format!("fill_{t}"), elementwise::fill_kernel::<E>, &[PTR, U64, scalar]));
    list.push(entry(format!("{}_{t}", Add::NAME), elementwise::binary_kernel::<E, Add>, &[PTR, PTR, PTR, U64]));
    list.push(entry(format!("{}_{t}", Mul::NAME), elementwise::binary_kernel::<E, Mul>, &[PTR, PTR, PTR, U64]));
    list.push(entry(format!("sum_{t}"), sum::sum_kernel::<E>, &[PTR, PTR, U64]));
    list.push(entry(format!("matmul_{t}"), matmul::matmul_kernel::<E>, &[PTR, PTR, PTR, U64, U64, U64]));
}

/// `cast_<s>_<d>` for every destination type `d`.
fn casts_from<S: Arith>(list: &mut Vec<Builtin>) {
    macro_rules! to {
        ($d:ty) => {
            list.push(entry(cast_name::<S, $d>(Nearest::NAME), cast::cast_kernel::<S, $d, Nearest>, &[PTR, PTR, U64]));
        };
    }
    for_each_elem!(to);
}

/// The 1.1 kernels of one type, casts aside.
fn per_type_1_1<E: Arith>(list: &mut Vec<Builtin>) {
    let t = E::DTYPE.name();
    let scalar = E::DTYPE.scalar_bytes();
    list.push(entry(
        format!("copy_strided_{t}"),
        strided::cast_strided_kernel::<E, E, Nearest>,
        &[PTR, PTR, U64, DIMS_BYTES, DIMS_BYTES, DIMS_BYTES],
    ));
    list.push(entry(
        format!("fill_strided_{t}"),
        strided::fill_strided_kernel::<E>,
        &[PTR, U64, DIMS_BYTES, DIMS_BYTES, scalar],
    ));
    list.push(entry(format!("axpby_{t}"), axpby::axpby_kernel::<E>, &[PTR, PTR, PTR, U64, scalar, scalar]));
    list.push(entry(format!("sum_dim_{t}"), sum_dim::sum_dim_kernel::<E>, &[PTR, PTR, U64, U64, U64]));
}

/// `cast_trunc_<s>_<d>`, `cast_strided_<s>_<d>` and
/// `cast_strided_trunc_<s>_<d>` for every destination type `d`.
fn casts_from_1_1<S: Arith>(list: &mut Vec<Builtin>) {
    const STRIDED: [usize; 6] = [PTR, PTR, U64, DIMS_BYTES, DIMS_BYTES, DIMS_BYTES];
    macro_rules! to {
        ($d:ty) => {
            list.push(entry(cast_name::<S, $d>(Trunc::NAME), Pair::<S, $d>::TRUNC, &[PTR, PTR, U64]));
            list.push(entry(
                cast_name::<S, $d>("cast_strided"),
                strided::cast_strided_kernel::<S, $d, Nearest>,
                &STRIDED,
            ));
            list.push(entry(cast_name::<S, $d>("cast_strided_trunc"), Pair::<S, $d>::STRIDED_TRUNC, &STRIDED));
        };
    }
    for_each_elem!(to);
}

/// The truncating kernels of one pair of types.
struct Pair<S, D>(PhantomData<(S, D)>);

impl<S: Arith, D: Arith> Pair<S, D> {
    /// `cast_trunc_<s>_<d>`: where truncating converts as rounding does
    /// (three pairs in four), `cast_<s>_<d>`'s kernel. Chosen in a constant,
    /// so the instantiation not taken is never compiled.
    const TRUNC: Kernel = if trunc_differs(S::DTYPE, D::DTYPE) {
        cast::cast_kernel::<S, D, Trunc>
    } else {
        cast::cast_kernel::<S, D, Nearest>
    };
    /// `cast_strided_trunc_<s>_<d>`, likewise `cast_strided_<s>_<d>`'s
    /// kernel where truncating makes no difference.
    const STRIDED_TRUNC: Kernel = if trunc_differs(S::DTYPE, D::DTYPE) {
        strided::cast_strided_kernel::<S, D, Trunc>
    } else {
        strided::cast_strided_kernel::<S, D, Nearest>
    };
}

/// `<prefix>_<s>_<d>`.
fn cast_name<S: Elem, D: Elem>(prefix: &str) -> String {
    format!("{prefix}_{}_{}", S::DTYPE.name(), D::DTYPE.name())
}
