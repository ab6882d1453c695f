//! `axpby_<t>(const T *a, const T *b, T *out, uint64_t n, T alpha, T beta)`:
//! `out[i] = alpha * a[i] + beta * b[i]`, computed in the type's
//! accumulator as `add_<t>` is (`f32` for the floats narrower than `f32`:
//! both products and the sum rounded to `f32`, then the result rounded once
//! to `T`; integers wrap; bool is `(alpha && a) || (beta && b)`). As for
//! `add_<t>`, `out` may be `a` and/or `b`; any other overlap is
//! `XDAL_ERROR_INVALID_VALUE`. The loops are `add_<t>`'s, so the kernel runs
//! at memory speed.
use super::arith::{Acc, Arith};
use super::elementwise::binary_share;
use super::grid::{guard, Args, Block, KernelResult};
use std::ffi::c_void;
use xdal_abi::{xdal_kernel_context_t, xdal_status_raw};

/// The `axpby_<t>` kernel.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, the arrays
/// valid for `n` elements.
pub(crate) unsafe extern "C" fn axpby_kernel<E: Arith>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `axpby`'s.
    guard(|| unsafe { axpby::<E>(ctx, args) })
}

/// The body of `axpby_kernel`.
unsafe fn axpby<E: Arith>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and six arguments of the
    // sizes `arg_sizes` gives (three pointers, u64, two scalars of E).
    let (block, a, b, out, n, alpha, beta) = unsafe {
        let args = Args::new(args)?;
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            args.get::<*mut u8>(1)?,
            args.get::<*mut u8>(2)?,
            args.get::<u64>(3)?,
            E::read_scalar(args.bytes(4)?).to_acc(),
            E::read_scalar(args.bytes(5)?).to_acc(),
        )
    };
    let op = |x: E, y: E| E::from_acc(alpha.mul(x.to_acc()).add(beta.mul(y.to_acc())));
    // SAFETY: the arrays are the launch's, valid for `n` elements.
    unsafe { binary_share(block, a, b, out, n, op) }
}
