//! `cast_<s>_<d>(const S *src, D *dst, uint64_t n)`: `dst[i] = convert(src[i])`
//! with the rules of `dtype::convert` (round to nearest even, saturate as
//! the target type does, integers wrap); `cast_trunc_<s>_<d>`, the same with
//! `dtype::convert_trunc` (float to integer truncates, E4M3 overflows to
//! NaN, as C's `static_cast` and PyTorch do).
//!
//! `dst` may be `src` itself when both types have the same width (an
//! in-place cast); any other overlap is `XDAL_ERROR_INVALID_VALUE`, since
//! blocks running in parallel would read what others already wrote.
//! `cast_share` is also the dense path of the strided casts.
use super::arith::Arith;
use super::grid::{guard, line_quantum, Args, Block, KernelResult};
use super::memory::Array;
use crate::dtype::{convert, convert_trunc, Elem};
use std::ffi::c_void;
use std::ops::Range;
use xdal_abi::{xdal_kernel_context_t, xdal_status, xdal_status_raw};

/// How a cast converts one element.
pub(crate) trait Conversion: 'static {
    /// The kernel name's prefix.
    const NAME: &'static str;
    /// `s` as a `D`.
    fn apply<S: Elem, D: Elem>(s: S) -> D;
}

/// `cast_<s>_<d>`: `dtype::convert`.
pub(crate) struct Nearest;
/// `cast_trunc_<s>_<d>`: `dtype::convert_trunc`.
pub(crate) struct Trunc;

impl Conversion for Nearest {
    const NAME: &'static str = "cast";
    #[inline(always)]
    fn apply<S: Elem, D: Elem>(s: S) -> D {
        convert(s)
    }
}

impl Conversion for Trunc {
    const NAME: &'static str = "cast_trunc";
    #[inline(always)]
    fn apply<S: Elem, D: Elem>(s: S) -> D {
        convert_trunc(s)
    }
}

/// The `cast_<s>_<d>` and `cast_trunc_<s>_<d>` kernels.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `src` and
/// `dst` valid for `n` elements.
pub(crate) unsafe extern "C" fn cast_kernel<S: Arith, D: Arith, C: Conversion>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `cast`'s.
    guard(|| unsafe { cast::<S, D, C>(ctx, args) })
}

/// The body of `cast_kernel`.
unsafe fn cast<S: Elem, D: Elem, C: Conversion>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> KernelResult {
    // SAFETY: the launch passes a live context and three arguments of the
    // sizes `arg_sizes` gives (two pointers, u64).
    let (block, src, dst, n) = unsafe {
        let args = Args::new(args)?;
        (Block::from_context(ctx)?, args.get::<*mut u8>(0)?, args.get::<*mut u8>(1)?, args.get::<u64>(2)?)
    };
    let (src, dst) = (Array::<S>::new(src, n)?, Array::<D>::new(dst, n)?);
    let in_place = dst.is_same(&src);
    if dst.overlaps(&src) && !in_place {
        return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
    }
    let range = block.share(dst.len(), quantum::<S, D>());
    // SAFETY: `range` is this block's own share of both arrays, which are
    // apart or the same memory with equal widths.
    unsafe { cast_share::<S, D, C>(src, dst, range, in_place) };
    Ok(())
}

/// The share quantum of a cast: shares on cache lines of the narrower type
/// are on lines of the wider one too.
pub(super) fn quantum<S: Elem, D: Elem>() -> usize {
    line_quantum(S::DTYPE).max(line_quantum(D::DTYPE))
}

/// `dst[i] = C::apply(src[i])` for `i` in `range`, with the loop that suits
/// the two types: bytes copied for the same type, vectorisable loops over
/// slices, two elements a byte into packed types.
///
/// # Safety
/// `range` is the calling block's own share of both arrays (starting on a
/// byte for packed types: a multiple of `quantum`); the arrays are apart, or
/// (`in_place`) the same memory with equal widths.
pub(super) unsafe fn cast_share<S: Elem, D: Elem, C: Conversion>(
    src: Array<S>,
    dst: Array<D>,
    range: Range<usize>,
    in_place: bool,
) {
    if range.is_empty() || (in_place && S::DTYPE == D::DTYPE) {
        return;
    }
    // SAFETY: per the contract, for every arm.
    unsafe {
        if in_place {
            each_element::<S, D, C>(src, dst, range);
        } else if S::DTYPE == D::DTYPE {
            copy_bytes(src, dst, range);
        } else if D::DTYPE.is_packed() {
            into_packed::<S, D, C>(src, dst, range);
        } else if S::DTYPE.is_packed() {
            let out = dst.slice_mut(range.clone());
            for (i, d) in range.zip(out) {
                *d = C::apply(src.get(i));
            }
        } else {
            let out = dst.slice_mut(range.clone());
            out.iter_mut().zip(src.slice(range)).for_each(|(d, &s)| *d = C::apply(s));
        }
    }
}

/// One element at a time, reading each before writing it: right for an
/// in-place cast between types of the same width.
///
/// # Safety
/// `range` is this block's share of both arrays.
unsafe fn each_element<S: Elem, D: Elem, C: Conversion>(src: Array<S>, dst: Array<D>, range: Range<usize>) {
    for i in range {
        // SAFETY: `i` is in this block's share.
        unsafe { dst.set(i, C::apply(src.get(i))) };
    }
}

/// A same-type cast between separate arrays: the bytes, copied.
///
/// # Safety
/// `range` is this block's share of both arrays, which do not overlap.
unsafe fn copy_bytes<S: Elem, D: Elem>(src: Array<S>, dst: Array<D>, range: Range<usize>) {
    let from = range.start;
    let units = if S::DTYPE.is_packed() { range.len() / 2 } else { range.len() * (S::DTYPE.bits() as usize / 8) };
    // SAFETY: `units` bytes from the unit holding element `from` lie in
    // both arrays, which do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(src.unit_ptr::<u8>(from), dst.unit_ptr::<u8>(from), units) };
    if S::DTYPE.is_packed() && range.len() % 2 == 1 {
        let last = range.end - 1;
        // SAFETY: `last` is in this block's share.
        unsafe { dst.set(last, convert(src.get(last))) };
    }
}

/// Converts into a packed type, two elements to a byte.
///
/// # Safety
/// `range` is this block's share of both arrays, starting on a byte.
unsafe fn into_packed<S: Elem, D: Elem, C: Conversion>(src: Array<S>, dst: Array<D>, range: Range<usize>) {
    // SAFETY: this block's share of `dst`, which does not overlap `src`.
    let (bytes, tail) = unsafe { dst.packed_mut(range.clone()) };
    let nibble = |i: usize| {
        // SAFETY: `i` is in this block's share of `src`.
        let value: D = C::apply(unsafe { src.get(i) });
        value.to_bits() as u8 & 0xF
    };
    for (j, byte) in bytes.iter_mut().enumerate() {
        let i = range.start + 2 * j;
        *byte = nibble(i) | nibble(i + 1) << 4;
    }
    if let Some(last) = tail {
        // SAFETY: `last` is in this block's share.
        unsafe { dst.set(last, D::from_bits(u64::from(nibble(last)))) };
    }
}
