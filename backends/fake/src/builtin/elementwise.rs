//! `fill_<t>`, `add_<t>` and `mul_<t>`: each block handles its contiguous
//! share of the `n` elements with a tight loop over slices (bytes, for the
//! packed types), so the compiler vectorises it and the kernels run at
//! memory speed. `fill_share` and `binary_share` serve the strided fill and
//! `axpby_<t>` too.
use super::arith::{Arith, BinOp};
use super::grid::{guard, line_quantum, Args, Block, KernelResult};
use super::memory::{zip2, Array};
use super::streaming::{fill_streaming, STREAMING_FILL_BYTES};
use crate::dtype::Elem;
use std::ffi::c_void;
use std::ops::Range;
use xdal_abi::{xdal_kernel_context_t, xdal_status, xdal_status_raw};

/// `fill_<t>(T *dst, uint64_t n, T value)`: `dst[i] = value`.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `dst` valid
/// for `n` elements.
pub(crate) unsafe extern "C" fn fill_kernel<E: Arith>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `fill`'s.
    guard(|| unsafe { fill::<E>(ctx, args) })
}

/// The body of `fill_kernel`.
unsafe fn fill<E: Arith>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and three arguments of the
    // sizes `arg_sizes` gives (pointer, u64, scalar of E).
    let (block, dst, n, value) = unsafe {
        let args = Args::new(args)?;
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            args.get::<u64>(1)?,
            E::read_scalar(args.bytes(2)?).canonical(),
        )
    };
    let dst = Array::<E>::new(dst, n)?;
    let range = block.share(dst.len(), line_quantum(E::DTYPE));
    // SAFETY: the range is this block's own share.
    unsafe { fill_share(dst, range, value) };
    Ok(())
}

/// `dst[i] = value` for `i` in `range`, with slice fills (whole bytes for
/// packed types). Also the dense path of `fill_strided_<t>`.
///
/// # Safety
/// `range` is the calling block's own share of `dst`, starting on a byte
/// for packed types (a multiple of `line_quantum`).
pub(super) unsafe fn fill_share<E: Elem>(dst: Array<E>, range: Range<usize>, value: E) {
    if range.is_empty() {
        return;
    }
    if E::DTYPE.is_packed() {
        let nibble = value.to_bits() as u8 & 0xF;
        // SAFETY: the range is this block's own share, starting on a byte.
        let (bytes, tail) = unsafe { dst.packed_mut(range) };
        bytes.fill(nibble | nibble << 4);
        if let Some(last) = tail {
            // SAFETY: `last` is in this block's share.
            unsafe { dst.set(last, value) };
        }
    } else {
        // SAFETY: the range is this block's own share, which no other
        // block writes.
        let share = unsafe { dst.slice_mut(range) };
        // The whole array decides, not the share: a large fill's blocks
        // each take a part that fits in cache, yet together they do not.
        if dst.len() * size_of::<E>() >= STREAMING_FILL_BYTES {
            fill_streaming(share, value);
        } else {
            share.fill(value);
        }
    }
}

/// `add_<t>` / `mul_<t>(const T *a, const T *b, T *out, uint64_t n)`:
/// `out[i] = a[i] op b[i]`, computed in `E::Acc`. `out` may be `a` and/or
/// `b` (in place); any other overlap is `XDAL_ERROR_INVALID_VALUE`.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, the arrays
/// valid for `n` elements.
pub(crate) unsafe extern "C" fn binary_kernel<E: Arith, O: BinOp>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `binary`'s.
    guard(|| unsafe { binary::<E, O>(ctx, args) })
}

/// The body of `binary_kernel`.
unsafe fn binary<E: Arith, O: BinOp>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and four arguments of the
    // sizes `arg_sizes` gives (three pointers, u64).
    let (block, a, b, out, n) = unsafe {
        let args = Args::new(args)?;
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            args.get::<*mut u8>(1)?,
            args.get::<*mut u8>(2)?,
            args.get::<u64>(3)?,
        )
    };
    let op = |x: E, y: E| E::from_acc(O::apply(x.to_acc(), y.to_acc()));
    // SAFETY: the arrays are the launch's, valid for `n` elements.
    unsafe { binary_share(block, a, b, out, n, op) }
}

/// `out[i] = op(a[i], b[i])` over this block's share of `n` elements,
/// after checking the three arrays: `out` may be `a` and/or `b`, any other
/// overlap is `XDAL_ERROR_INVALID_VALUE`. Shared with `axpby_<t>`.
///
/// # Safety
/// The three pointers are valid for `n` elements.
pub(super) unsafe fn binary_share<E: Elem>(
    block: Block,
    a: *mut u8,
    b: *mut u8,
    out: *mut u8,
    n: u64,
    op: impl Fn(E, E) -> E,
) -> KernelResult {
    let (a, b, out) = (Array::<E>::new(a, n)?, Array::<E>::new(b, n)?, Array::<E>::new(out, n)?);
    for input in [a, b] {
        if out.overlaps(&input) && !out.is_same(&input) {
            return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
        }
    }
    let range = block.share(n as usize, line_quantum(E::DTYPE));
    if range.is_empty() {
        return Ok(());
    }
    if E::DTYPE.is_packed() {
        let nibble = |byte: u8, shift: u8| E::from_bits(u64::from(byte >> shift));
        let pair = |x: u8, y: u8| {
            let lo = op(nibble(x, 0), nibble(y, 0)).to_bits() as u8 & 0xF;
            let hi = op(nibble(x, 4), nibble(y, 4)).to_bits() as u8 & 0xF;
            lo | hi << 4
        };
        let (start, whole) = (range.start, range.len() / 2);
        // SAFETY: this block's share, starting on a byte: `whole` bytes
        // from `start / 2` in each array; `out` is `a` or `b` exactly or
        // apart from them (checked above).
        unsafe { zip2(a.unit_ptr::<u8>(start), b.unit_ptr::<u8>(start), out.unit_ptr::<u8>(start), whole, pair) };
        let tail = (range.len() % 2 == 1).then(|| range.end - 1);
        if let Some(last) = tail {
            // SAFETY: `last` is in this block's share.
            unsafe { out.set(last, op(a.get(last), b.get(last))) };
        }
    } else {
        let start = range.start;
        // SAFETY: this block's share of three aligned arrays of `n`
        // elements; `out` is `a` or `b` exactly or apart from them.
        unsafe { zip2(a.unit_ptr::<E>(start), b.unit_ptr::<E>(start), out.unit_ptr::<E>(start), range.len(), op) };
    }
    Ok(())
}
