//! The strided kernels, over up to 16 dimensions whose sizes and strides
//! (in elements, nibbles for the packed types) come by value:
//!
//! - `copy_strided_<t>` and `cast_strided_<s>_<d>` / `cast_strided_trunc_<s>_<d>`
//!   `(const S *src, D *dst, uint64_t ndim, uint64_t sizes[16],
//!   int64_t src_strides[16], int64_t dst_strides[16])`:
//!   `dst[sum i_k*dst_strides[k]] = convert(src[sum i_k*src_strides[k]])`;
//! - `fill_strided_<t>(T *dst, uint64_t ndim, uint64_t sizes[16],
//!   int64_t dst_strides[16], T value)`.
//!
//! Blocks split the elements by their index in row-major order of `sizes`.
//! Strides may be negative; the source's may be 0 (broadcast); the
//! destination's may not along a dimension of size 2 or more (two writes to
//! one element: `XDAL_ERROR_INVALID_VALUE`). Source and destination must not
//! overlap unless they are the same elements (same start, widths and
//! strides: an in-place cast). A destination whose elements cannot be shown
//! to be distinct (see `Walk::is_one_to_one`) is written by block 0 alone in
//! logical order, so the last write wins, as in a sequential loop.
//!
//! When every side is contiguous the dense loops of `cast_<s>_<d>` and
//! `fill_<t>` do the work; otherwise each stretch along the innermost
//! dimension is one loop, over slices where both strides are 1.
use super::arith::Arith;
use super::cast::{cast_share, quantum, Conversion};
use super::elementwise::fill_share;
use super::grid::{guard, line_quantum, Args, Block, KernelResult};
use super::memory::Array;
use crate::dtype::Elem;
use std::ffi::c_void;
use xdal_abi::{xdal_kernel_context_t, xdal_status, xdal_status_raw};
use xdal_backend_support::strided::{Walk, MAX_DIMS};

/// The `copy_strided_<t>`, `cast_strided_<s>_<d>` and
/// `cast_strided_trunc_<s>_<d>` kernels (a copy is a cast to the same type).
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `src` and
/// `dst` valid for every offset the sizes and strides reach.
/// A shape `Walk` refuses is the kernel's invalid value (the fake's kernels
/// carry no message).
fn refused(_: String) -> xdal_status {
    xdal_status::XDAL_ERROR_INVALID_VALUE
}

pub(crate) unsafe extern "C" fn cast_strided_kernel<S: Arith, D: Arith, C: Conversion>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `cast_strided`'s.
    guard(|| unsafe { cast_strided::<S, D, C>(ctx, args) })
}

/// How the blocks of a launch share the work.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Contiguous on every side: the dense loops, each block its share.
    Dense,
    /// Each block walks its share of the logical order.
    Shares,
    /// Block 0 walks everything in logical order; the others do nothing.
    Alone,
}

/// The body of `cast_strided_kernel`.
unsafe fn cast_strided<S: Elem, D: Elem, C: Conversion>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> KernelResult {
    // SAFETY: the launch passes a live context and six arguments of the
    // sizes `arg_sizes` gives (two pointers, u64, three 128-byte arrays).
    let (block, src, dst, walk) = unsafe {
        let args = Args::new(args)?;
        let sizes = args.get::<[u64; MAX_DIMS]>(3)?;
        let (src_strides, dst_strides) = (args.get::<[i64; MAX_DIMS]>(4)?, args.get::<[i64; MAX_DIMS]>(5)?);
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            args.get::<*mut u8>(1)?,
            Walk::new(args.get::<u64>(2)?, &sizes, [&src_strides, &dst_strides]).map_err(refused)?,
        )
    };
    if walk.count() == 0 {
        // Nothing is touched; the pointers are checked as a dense kernel's.
        Array::<S>::new(src, 0)?;
        Array::<D>::new(dst, 0)?;
        return Ok(());
    }
    if walk.broadcasts(1) {
        return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
    }
    let ((src_lo, src_hi), (dst_lo, dst_hi)) = (walk.span(0).map_err(refused)?, walk.span(1).map_err(refused)?);
    let (src_array, src_origin) = Array::<S>::spanning(src, src_lo, src_hi)?;
    let (dst_array, dst_origin) = Array::<D>::spanning(dst, dst_lo, dst_hi)?;
    let one_to_one = walk.is_one_to_one(1);
    let in_place = src == dst && S::DTYPE.bits() == D::DTYPE.bits() && walk.same_offsets(0, 1);
    if dst_array.overlaps(&src_array) && !in_place {
        return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
    }
    if in_place && S::DTYPE == D::DTYPE {
        // Every element onto itself.
        return Ok(());
    }
    if in_place && !one_to_one {
        // An element visited twice would be converted twice.
        return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
    }
    // In place, a packed element is read by the thread that writes it, but
    // its byte's other nibble may belong to another block: one block then.
    let plan = if walk.is_dense() {
        Plan::Dense
    } else if !one_to_one || (in_place && D::DTYPE.is_packed()) {
        Plan::Alone
    } else {
        Plan::Shares
    };
    let range = match plan {
        Plan::Dense => block.share(walk.count(), quantum::<S, D>()),
        Plan::Shares => block.share(walk.count(), line_quantum(D::DTYPE)),
        Plan::Alone if block.is_first() => 0..walk.count(),
        Plan::Alone => return Ok(()),
    };
    if plan == Plan::Dense {
        // Contiguous from offset 0 on both sides: the arrays start at
        // `src` and `dst` and the logical index is the array index.
        // SAFETY: this block's share of both arrays, which are apart or
        // the same memory with equal widths.
        unsafe { cast_share::<S, D, C>(src_array, dst_array, range, in_place) };
        return Ok(());
    }
    let [src_step, dst_step] = walk.inner_strides();
    let shared = plan == Plan::Shares && D::DTYPE.is_packed();
    walk.runs(range, |[src_offset, dst_offset], len| {
        let s = src_origin.wrapping_add(src_offset) as usize;
        let d = dst_origin.wrapping_add(dst_offset) as usize;
        // SAFETY: the run's elements lie inside both arrays (they span
        // every offset the walk reaches); its destination elements are this
        // block's alone (one-to-one, split by logical index, or one block
        // walks everything); the source is not written meanwhile, or is the
        // destination itself element for element (in place).
        unsafe { cast_run::<S, D, C>(src_array, dst_array, (s, src_step), (d, dst_step), len, shared) };
    });
    Ok(())
}

/// Converts `len` elements: source from index `src.0` by `src.1`,
/// destination from `dst.0` by `dst.1`. With `shared`, packed destination
/// nibbles are written atomically (other blocks may write the other nibble
/// of a byte).
///
/// # Safety
/// Every index lies inside its array; the destination elements are the
/// caller's alone and, when `shared` is false, so are their bytes; the
/// source elements are not written by others meanwhile.
#[inline]
unsafe fn cast_run<S: Elem, D: Elem, C: Conversion>(
    src_array: Array<S>,
    dst_array: Array<D>,
    src: (usize, isize),
    dst: (usize, isize),
    len: usize,
    shared: bool,
) {
    let ((s, s_step), (d, d_step)) = (src, dst);
    let unpacked = !S::DTYPE.is_packed() && !D::DTYPE.is_packed();
    let apart = !std::ptr::eq(src_array.unit_ptr::<u8>(s), dst_array.unit_ptr::<u8>(d));
    // SAFETY: per the contract, for every arm; slices are formed only over
    // unpacked arrays that do not overlap here (they are apart, or in place
    // with the same offsets, which the last arm handles).
    unsafe {
        if unpacked && s_step == 1 && d_step == 1 && apart {
            let out = dst_array.slice_mut(d..d + len);
            let values = src_array.slice(s..s + len);
            if S::DTYPE == D::DTYPE {
                // Same type: the bits, copied.
                let values = std::slice::from_raw_parts(values.as_ptr().cast::<D>(), len);
                out.copy_from_slice(values);
            } else {
                out.iter_mut().zip(values).for_each(|(o, &v)| *o = C::apply(v));
            }
        } else if s_step == 0 && apart {
            let value: D = C::apply(src_array.get(s));
            put_run(dst_array, (d, d_step), len, shared, value);
        } else {
            for k in 0..len {
                let value = C::apply(src_array.get(s.wrapping_add_signed(s_step.wrapping_mul(k as isize))));
                put(dst_array, d.wrapping_add_signed(d_step.wrapping_mul(k as isize)), shared, value);
            }
        }
    }
}

/// Writes element `i`, atomically for a packed `shared` destination.
///
/// # Safety
/// As `Array::set`, or `Array::set_shared` when `shared`.
#[inline(always)]
unsafe fn put<D: Elem>(dst: Array<D>, i: usize, shared: bool, value: D) {
    // SAFETY: per the contract.
    unsafe {
        if shared {
            dst.set_shared(i, value);
        } else {
            dst.set(i, value);
        }
    }
}

/// Writes `value` to `len` elements from index `dst.0` by `dst.1`.
///
/// # Safety
/// As `put`, for every one of them.
#[inline]
unsafe fn put_run<D: Elem>(dst_array: Array<D>, dst: (usize, isize), len: usize, shared: bool, value: D) {
    let (d, step) = dst;
    // SAFETY: per the contract.
    unsafe {
        if step == 1 && !D::DTYPE.is_packed() {
            dst_array.slice_mut(d..d + len).fill(value);
        } else {
            for k in 0..len {
                put(dst_array, d.wrapping_add_signed(step.wrapping_mul(k as isize)), shared, value);
            }
        }
    }
}

/// The `fill_strided_<t>` kernel.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `dst` valid
/// for every offset the sizes and strides reach.
pub(crate) unsafe extern "C" fn fill_strided_kernel<E: Arith>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `fill_strided`'s.
    guard(|| unsafe { fill_strided::<E>(ctx, args) })
}

/// The body of `fill_strided_kernel`.
unsafe fn fill_strided<E: Elem>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and five arguments of the
    // sizes `arg_sizes` gives (pointer, u64, two 128-byte arrays, scalar).
    let (block, dst, walk, value) = unsafe {
        let args = Args::new(args)?;
        let (sizes, strides) = (args.get::<[u64; MAX_DIMS]>(2)?, args.get::<[i64; MAX_DIMS]>(3)?);
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            Walk::new(args.get::<u64>(1)?, &sizes, [&strides]).map_err(refused)?,
            E::read_scalar(args.bytes(4)?).canonical(),
        )
    };
    if walk.count() == 0 {
        Array::<E>::new(dst, 0)?;
        return Ok(());
    }
    if walk.broadcasts(0) {
        return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
    }
    let (lo, hi) = walk.span(0).map_err(refused)?;
    let (array, origin) = Array::<E>::spanning(dst, lo, hi)?;
    let one_to_one = walk.is_one_to_one(0);
    let quantum = line_quantum(E::DTYPE);
    if walk.is_dense() {
        // SAFETY: this block's share of `dst`, which starts at offset 0.
        unsafe { fill_share(array, block.share(walk.count(), quantum), value) };
        return Ok(());
    }
    let range = if one_to_one {
        block.share(walk.count(), quantum)
    } else if block.is_first() {
        0..walk.count()
    } else {
        return Ok(());
    };
    let [step] = walk.inner_strides();
    let shared = one_to_one && E::DTYPE.is_packed();
    walk.runs(range, |[offset], len| {
        let first = origin.wrapping_add(offset) as usize;
        // SAFETY: the run lies inside the array; its elements are this
        // block's alone (one-to-one and split by logical index, or one
        // block walks everything), their bytes too unless `shared`.
        unsafe { put_run(array, (first, step), len, shared, value) };
    });
    Ok(())
}
