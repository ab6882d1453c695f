//! `sum_<t>(const T *x, T *out, uint64_t n)`: `out[0] = x[0] + ... + x[n-1]`
//! in the accumulator type (`f32` for floats narrower than `f32`, `f64`
//! for `f64`, wrapping integers, or for bool), rounded back once.
//!
//! Only block 0 computes, whatever the grid, so the result never depends on
//! the launch shape or on thread timing. For accuracy the floats are summed
//! in runs of `RUN` elements, each run in `LANES` interleaved partial sums
//! (which also lets the loop vectorise), and the partial and run sums are
//! combined pairwise: the rounding error grows like `RUN / LANES + log2 n`
//! ulps instead of `n`. Integer sums wrap, so their order does not matter.
//! `out` may lie inside `x`: all of `x` is read before `out` is written.
use super::arith::{Acc, Arith};
use super::grid::{guard, Args, Block, KernelResult};
use super::memory::Array;
use std::ffi::c_void;
use std::ops::Range;
use xdal_abi::{xdal_kernel_context_t, xdal_status_raw};

/// Elements summed in lanes before run sums are combined pairwise.
pub(super) const RUN: usize = 4096;
/// Interleaved partial sums within a run.
pub(super) const LANES: usize = 16;

/// The `sum_<t>` kernel.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `x` valid for
/// `n` elements and `out` for one.
pub(crate) unsafe extern "C" fn sum_kernel<E: Arith>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `sum`'s.
    guard(|| unsafe { sum::<E>(ctx, args) })
}

/// The body of `sum_kernel`.
unsafe fn sum<E: Arith>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and three arguments of the
    // sizes `arg_sizes` gives (two pointers, u64).
    let (block, x, out, n) = unsafe {
        let args = Args::new(args)?;
        (Block::from_context(ctx)?, args.get::<*mut u8>(0)?, args.get::<*mut u8>(1)?, args.get::<u64>(2)?)
    };
    let (x, out) = (Array::<E>::new(x, n)?, Array::<E>::new(out, 1)?);
    if !block.is_first() {
        return Ok(());
    }
    let total = if x.len() == 0 {
        E::Acc::ZERO
    } else {
        // SAFETY: only this block runs; nobody writes `x` meanwhile.
        unsafe { total(x, 0..x.len()) }
    };
    // SAFETY: `out` holds one element, and only this block writes it.
    unsafe { out.set(0, E::from_acc(total)) };
    Ok(())
}

/// The sum of `x[range]` (not empty): its runs of `RUN` elements, each
/// summed by `run`, combined pairwise. `sum_dim_<t>` sums contiguous
/// slices with it too, so both kernels give the same bits for one slice.
///
/// # Safety
/// `range` inside `x`; nobody writes it meanwhile.
pub(super) unsafe fn total<E: Arith>(x: Array<E>, range: Range<usize>) -> E::Acc {
    let (start, end) = (range.start, range.end);
    let mut run_at = |k: usize| {
        let first = start + k * RUN;
        // SAFETY: each run lies inside `range`.
        unsafe { run(x, first..end.min(first + RUN)) }
    };
    tree(range.len().div_ceil(RUN), &mut run_at, &|a: E::Acc, b| a.add(b))
}

/// The sum of one run, in `LANES` interleaved partial sums.
///
/// # Safety
/// `range` inside `x`; nobody writes it meanwhile.
unsafe fn run<E: Arith>(x: Array<E>, range: Range<usize>) -> E::Acc {
    let mut lanes = [E::Acc::IDENTITY; LANES];
    if E::DTYPE.is_packed() {
        for (k, i) in range.enumerate() {
            // SAFETY: `i` is inside `x`.
            let v = unsafe { x.get(i) }.to_acc();
            lanes[k % LANES] = lanes[k % LANES].add(v);
        }
    } else {
        // SAFETY: per the contract.
        let values = unsafe { x.slice(range) };
        let chunks = values.chunks_exact(LANES);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (lane, v) in lanes.iter_mut().zip(chunk) {
                *lane = lane.add(v.to_acc());
            }
        }
        for (lane, v) in lanes.iter_mut().zip(rest) {
            *lane = lane.add(v.to_acc());
        }
    }
    pairwise(&lanes)
}

/// `values` summed as a balanced tree.
fn pairwise<A: Acc>(values: &[A]) -> A {
    match values.len() {
        0 => A::IDENTITY,
        len => tree(len, &mut |k| values[k], &|a: A, b| a.add(b)),
    }
}

/// `item(0) + ... + item(count - 1)` (`count` at least 1) as a balanced
/// binary tree: the left half holds `count / 2` items. The summation order
/// of `sum_<t>`, which `sum_dim_<t>` follows for many columns at once.
pub(super) fn tree<V>(count: usize, item: &mut impl FnMut(usize) -> V, add: &impl Fn(V, V) -> V) -> V {
    debug_assert!(count > 0);
    subtree(0, count, item, add)
}

/// `tree` over the items `lo..hi`.
fn subtree<V>(lo: usize, hi: usize, item: &mut impl FnMut(usize) -> V, add: &impl Fn(V, V) -> V) -> V {
    if hi - lo == 1 {
        item(lo)
    } else {
        let mid = lo + (hi - lo) / 2;
        let left = subtree(lo, mid, item, add);
        add(left, subtree(mid, hi, item, add))
    }
}
