//! `sum_dim_<t>(const T *x, T *out, uint64_t outer, uint64_t reduce, uint64_t inner)`:
//! for a dense `[outer, reduce, inner]` array,
//! `out[o*inner + i] = sum over r of x[o*reduce*inner + r*inner + i]`.
//!
//! Each output is summed exactly as `sum_<t>` sums its `reduce` values (the
//! same accumulator, runs, lanes and pairwise tree), so it has the same
//! accuracy and, for any grid, the same bits as `sum_<t>` of that slice.
//! Blocks split the outputs, never one output, so nothing depends on the
//! grid or on timing. With `inner` 1 the slices are contiguous and go
//! through `sum::total`; otherwise up to `TILE` neighbouring outputs are
//! summed together, reading a short contiguous row of `x` per `r`, which
//! keeps the loops vectorised and the accesses in whole cache lines.
//! `out` must not overlap `x` (`XDAL_ERROR_INVALID_VALUE`): other blocks
//! would read what one already wrote.
use super::arith::{Acc, Arith};
use super::elementwise::fill_share;
use super::grid::{guard, line_quantum, Args, Block, KernelResult};
use super::memory::Array;
use super::sum::{total, tree, LANES, RUN};
use std::ffi::c_void;
use std::ops::Range;
use xdal_abi::{xdal_kernel_context_t, xdal_status, xdal_status_raw};

/// Neighbouring outputs summed together.
const TILE: usize = 64;

// The lane sums are combined pairwise by rows, which needs a power of two.
const _: () = assert!(LANES.is_power_of_two());

/// The `sum_dim_<t>` kernel.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `x` valid for
/// `outer * reduce * inner` elements and `out` for `outer * inner`.
pub(crate) unsafe extern "C" fn sum_dim_kernel<E: Arith>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `sum_dim`'s.
    guard(|| unsafe { sum_dim::<E>(ctx, args) })
}

/// The body of `sum_dim_kernel`.
unsafe fn sum_dim<E: Arith>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and five arguments of the
    // sizes `arg_sizes` gives (two pointers, three u64).
    let (block, x, out, outer, reduce, inner) = unsafe {
        let args = Args::new(args)?;
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            args.get::<*mut u8>(1)?,
            args.get::<u64>(2)?,
            args.get::<u64>(3)?,
            args.get::<u64>(4)?,
        )
    };
    let invalid = xdal_status::XDAL_ERROR_INVALID_VALUE;
    let elements = outer.checked_mul(reduce).and_then(|e| e.checked_mul(inner)).ok_or(invalid)?;
    let outputs = outer.checked_mul(inner).ok_or(invalid)?;
    let (x, out) = (Array::<E>::new(x, elements)?, Array::<E>::new(out, outputs)?);
    if out.overlaps(&x) {
        return Err(invalid);
    }
    // Shares start on a byte of packed outputs (the quantum is even), so
    // no two blocks write one byte.
    let range = block.share(out.len(), line_quantum(E::DTYPE));
    // Both fit in `usize`: `x` holds `elements` of them.
    let (reduce, inner) = (reduce as usize, inner as usize);
    if reduce == 0 {
        // Empty sums: +0 (false for bool).
        // SAFETY: this block's share of `out`, starting on a byte.
        unsafe { fill_share(out, range, E::from_acc(E::Acc::ZERO)) };
        return Ok(());
    }
    if inner == 1 {
        for o in range {
            // SAFETY: the slice lies inside `x`, which nobody writes; `o`
            // is in this block's share of `out`.
            unsafe { out.set(o, E::from_acc(total(x, o * reduce..(o + 1) * reduce))) };
        }
        return Ok(());
    }
    let mut lanes = [[E::Acc::IDENTITY; TILE]; LANES];
    let mut i = range.start;
    while i < range.end {
        let (o, column) = (i / inner, i % inner);
        let width = TILE.min(inner - column).min(range.end - i);
        let first = o * reduce * inner + column;
        let mut run_at = |k: usize| {
            let rows = k * RUN..reduce.min((k + 1) * RUN);
            // SAFETY: rows `rows` of columns `first..first + width` lie
            // inside `x`, which nobody writes.
            unsafe { run_columns(x, first, inner, rows, width, &mut lanes) }
        };
        let add = |a: [E::Acc; TILE], b: [E::Acc; TILE]| std::array::from_fn(|j| a[j].add(b[j]));
        let sums = tree(reduce.div_ceil(RUN), &mut run_at, &add);
        for (j, &sum) in sums[..width].iter().enumerate() {
            // SAFETY: `i + j` is in this block's share of `out`.
            unsafe { out.set(i + j, E::from_acc(sum)) };
        }
        i += width;
    }
    Ok(())
}

/// The sums of one run of rows for `width` neighbouring columns:
/// `x[first + r*inner + j]` for `r` in `rows`, `j < width`, each column in
/// `LANES` interleaved partial sums combined pairwise, as `sum::run` does
/// for one contiguous run. Columns from `width` on are left at the
/// identity.
///
/// # Safety
/// Those elements lie inside `x`; nobody writes them meanwhile.
unsafe fn run_columns<E: Arith>(
    x: Array<E>,
    first: usize,
    inner: usize,
    rows: Range<usize>,
    width: usize,
    lanes: &mut [[E::Acc; TILE]; LANES],
) -> [E::Acc; TILE] {
    for lane in lanes.iter_mut() {
        lane[..width].fill(E::Acc::IDENTITY);
    }
    for (k, r) in rows.enumerate() {
        let lane = &mut lanes[k % LANES][..width];
        let start = first + r * inner;
        if E::DTYPE.is_packed() {
            for (j, acc) in lane.iter_mut().enumerate() {
                // SAFETY: inside `x`, per the contract.
                *acc = acc.add(unsafe { x.get(start + j) }.to_acc());
            }
        } else {
            // SAFETY: inside `x`, per the contract.
            let values = unsafe { x.slice(start..start + width) };
            lane.iter_mut().zip(values).for_each(|(acc, v)| *acc = acc.add(v.to_acc()));
        }
    }
    // `pairwise` over the lanes of every column at once: with a power of
    // two of lanes its tree adds neighbours, then neighbouring pairs, and
    // so on, which row operations reproduce exactly.
    let mut step = 1;
    while step < LANES {
        for l in (0..LANES).step_by(2 * step) {
            let (left, right) = lanes.split_at_mut(l + step);
            let (sum, other) = (&mut left[l][..width], &right[0][..width]);
            sum.iter_mut().zip(other).for_each(|(a, &b)| *a = a.add(b));
        }
        step *= 2;
    }
    let mut sums = [E::Acc::IDENTITY; TILE];
    sums[..width].copy_from_slice(&lanes[0][..width]);
    sums
}
