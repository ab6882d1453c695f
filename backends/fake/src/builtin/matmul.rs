//! `matmul_<t>(const T *a, const T *b, T *c, uint64_t m, uint64_t n, uint64_t k)`:
//! row-major `c[m,n] = a[m,k] * b[k,n]`, accumulated in `T::Acc` (`f32`
//! for the narrow floats, wrapping for integers, OR of ANDs for bool).
//!
//! The rows of `c` are split across blocks. `f32` and `f64` go to
//! `matrixmultiply`'s GEMM (at the speed of the machine's vector units, as
//! a BLAS: each element a sum of `k` fused multiply-adds whose grouping is
//! the library's, so the last bits may differ from a sum in order of `k`,
//! as cuBLAS's do from a CPU's). The other types work tile by tile: `a` and
//! `b` tiles are decoded into accumulator-typed panels that fit in cache
//! (`KT` x `NT` of `b`, `MS` x `KT` of `a`), and a register-blocked
//! micro-kernel updates `R` x `W` accumulators over a whole panel's depth,
//! its inner loop running over contiguous panel rows so it vectorises;
//! their elements are summed in order of `k`. Neither result depends on
//! the grid. `c` must not overlap `a` or `b` (`XDAL_ERROR_INVALID_VALUE`).
use super::arith::{Acc, Arith};
use super::grid::{guard, Args, Block, KernelResult};
use super::memory::Array;
use std::ffi::c_void;
use xdal_abi::{xdal_kernel_context_t, xdal_status, xdal_status_raw};

/// The fewest rows of `c` a block gives to a GEMM call (fewer only where
/// `c` has fewer).
const GEMM_ROWS: usize = 64;
/// Columns of a panel.
const NT: usize = 256;
/// Depth of a panel.
const KT: usize = 128;
/// Rows of `c` whose accumulators are kept together.
const MS: usize = 64;
/// Rows of the micro-kernel.
const R: usize = 4;
/// Columns of the micro-kernel.
const W: usize = 8;

/// The `matmul_<t>` kernel.
///
/// # Safety
/// A kernel: `ctx` and `args` as the launch path passes them, `a`, `b` and
/// `c` valid for `m*k`, `k*n` and `m*n` elements.
pub(crate) unsafe extern "C" fn matmul_kernel<E: Arith>(
    ctx: *const xdal_kernel_context_t,
    args: *const *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is `matmul`'s.
    guard(|| unsafe { matmul::<E>(ctx, args) })
}

/// The three matrices, checked.
struct Operands<E> {
    a: Array<E>,
    b: Array<E>,
    c: Array<E>,
    m: usize,
    n: usize,
    k: usize,
}

/// The body of `matmul_kernel`.
unsafe fn matmul<E: Arith>(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> KernelResult {
    // SAFETY: the launch passes a live context and six arguments of the
    // sizes `arg_sizes` gives (three pointers, three u64).
    let (block, a, b, c, m, n, k) = unsafe {
        let args = Args::new(args)?;
        (
            Block::from_context(ctx)?,
            args.get::<*mut u8>(0)?,
            args.get::<*mut u8>(1)?,
            args.get::<*mut u8>(2)?,
            args.get::<u64>(3)?,
            args.get::<u64>(4)?,
            args.get::<u64>(5)?,
        )
    };
    let elements = |x: u64, y: u64| x.checked_mul(y).ok_or(xdal_status::XDAL_ERROR_INVALID_VALUE);
    let ops = Operands {
        a: Array::<E>::new(a, elements(m, k)?)?,
        b: Array::<E>::new(b, elements(k, n)?)?,
        c: Array::<E>::new(c, elements(m, n)?)?,
        m: m as usize,
        n: n as usize,
        k: k as usize,
    };
    if ops.c.overlaps(&ops.a) || ops.c.overlaps(&ops.b) {
        return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
    }
    // With an odd row length, a packed row may end mid-byte: give blocks
    // an even number of rows so they never share a byte of `c`. A GEMM
    // packs all of `b` per call: blocks of fewer than `GEMM_ROWS` rows
    // would spend more on that than on their products, whatever the grid.
    let quantum = if E::GEMM {
        GEMM_ROWS
    } else if E::DTYPE.is_packed() && ops.n % 2 == 1 {
        2
    } else {
        1
    };
    let rows = block.share(ops.m, quantum);
    if rows.is_empty() || ops.n == 0 {
        return Ok(());
    }
    if E::GEMM {
        let (first_a, first_c) = (rows.start * ops.k, rows.start * ops.n);
        // SAFETY: this block's rows of `c` (which overlaps neither `a` nor
        // `b`, checked above) and the rows of `a` they need, inside the
        // arrays; `b` whole. Nobody else writes them meanwhile.
        let done = unsafe {
            let a = ops.a.slice(first_a..first_a + rows.len() * ops.k).as_ptr();
            let b = ops.b.slice(0..ops.k * ops.n).as_ptr();
            let c = ops.c.slice_mut(first_c..first_c + rows.len() * ops.n).as_mut_ptr();
            E::gemm(a, b, c, rows.len(), ops.n, ops.k)
        };
        if done {
            return Ok(());
        }
    }
    let mut work = Panels::<E::Acc>::new(MS.min(rows.len()), KT.min(ops.k), NT.min(ops.n));
    for i0 in rows.clone().step_by(MS) {
        let ms = MS.min(rows.end - i0);
        for j0 in (0..ops.n).step_by(NT) {
            let nt = NT.min(ops.n - j0);
            // SAFETY: the tile lies in this block's rows of `c` and inside
            // `a` and `b`, which nobody writes meanwhile.
            unsafe { tile(&ops, &mut work, i0, ms, j0, nt) };
        }
    }
    Ok(())
}

/// The scratch panels of one block, in accumulator type.
struct Panels<A> {
    a: Vec<A>,
    b: Vec<A>,
    c: Vec<A>,
}

impl<A: Acc> Panels<A> {
    /// Panels for tiles of at most `ms` rows, depth `kt` and `nt` columns:
    /// no bigger than the problem, so small launches allocate little.
    fn new(ms: usize, kt: usize, nt: usize) -> Self {
        Panels { a: vec![A::ZERO; ms * kt], b: vec![A::ZERO; kt * nt], c: vec![A::ZERO; ms * nt] }
    }
}

/// Computes `c[i0..i0+ms, j0..j0+nt]`.
///
/// # Safety
/// Those rows are this block's; `a` and `b` are not written meanwhile.
unsafe fn tile<E: Arith>(ops: &Operands<E>, work: &mut Panels<E::Acc>, i0: usize, ms: usize, j0: usize, nt: usize) {
    let (n, k) = (ops.n, ops.k);
    let start = if k == 0 { E::Acc::ZERO } else { E::Acc::IDENTITY };
    work.c[..ms * nt].fill(start);
    for k0 in (0..k).step_by(KT) {
        let kt = KT.min(k - k0);
        for kk in 0..kt {
            let row = &mut work.b[kk * nt..(kk + 1) * nt];
            // SAFETY: row `k0 + kk`, columns `j0..j0+nt` lie inside `b`.
            unsafe { load(ops.b, (k0 + kk) * n + j0, row) };
        }
        for ii in 0..ms {
            let row = &mut work.a[ii * kt..(ii + 1) * kt];
            // SAFETY: row `i0 + ii`, columns `k0..k0+kt` lie inside `a`.
            unsafe { load(ops.a, (i0 + ii) * k + k0, row) };
        }
        panel_product(&work.a, &work.b, &mut work.c, ms, nt, kt);
    }
    for ii in 0..ms {
        let first = (i0 + ii) * n + j0;
        let row = &work.c[ii * nt..(ii + 1) * nt];
        if E::DTYPE.is_packed() {
            for (jj, &v) in row.iter().enumerate() {
                // SAFETY: in this block's rows of `c`.
                unsafe { ops.c.set(first + jj, E::from_acc(v)) };
            }
        } else {
            // SAFETY: in this block's rows of `c`, which `a` and `b` do
            // not overlap.
            let out = unsafe { ops.c.slice_mut(first..first + nt) };
            out.iter_mut().zip(row).for_each(|(o, &v)| *o = E::from_acc(v));
        }
    }
}

/// Decodes `out.len()` elements of `x` from `first` into `out`.
///
/// # Safety
/// Those elements lie inside `x`, which nobody writes meanwhile.
#[inline]
unsafe fn load<E: Arith>(x: Array<E>, first: usize, out: &mut [E::Acc]) {
    if E::DTYPE.is_packed() {
        for (j, o) in out.iter_mut().enumerate() {
            // SAFETY: per the contract.
            *o = unsafe { x.get(first + j) }.to_acc();
        }
    } else {
        // SAFETY: per the contract.
        let values = unsafe { x.slice(first..first + out.len()) };
        out.iter_mut().zip(values).for_each(|(o, v)| *o = v.to_acc());
    }
}

/// `c[ms, nt] += a[ms, kt] * b[kt, nt]` on the panels (row strides `kt`,
/// `nt`, `nt`).
fn panel_product<A: Acc>(a: &[A], b: &[A], c: &mut [A], ms: usize, nt: usize, kt: usize) {
    let wide = nt / W * W;
    let mut i = 0;
    while i + R <= ms {
        for j in (0..wide).step_by(W) {
            micro(a, b, c, i, j, nt, kt);
        }
        for ii in i..i + R {
            row_update(a, b, c, ii, wide, nt, kt);
        }
        i += R;
    }
    for ii in i..ms {
        row_update(a, b, c, ii, 0, nt, kt);
    }
}

/// The micro-kernel: `R` x `W` accumulators held in registers across the
/// whole depth `kt`, so each `b` value loaded feeds `R` rows.
#[inline(always)]
fn micro<A: Acc>(a: &[A], b: &[A], c: &mut [A], i: usize, j: usize, nt: usize, kt: usize) {
    let mut acc = [[A::ZERO; W]; R];
    let a_rows: [&[A]; R] = std::array::from_fn(|ii| &a[(i + ii) * kt..][..kt]);
    for (ii, row) in acc.iter_mut().enumerate() {
        row.copy_from_slice(&c[(i + ii) * nt + j..][..W]);
    }
    for kk in 0..kt {
        let bv: &[A; W] = b[kk * nt + j..][..W].try_into().expect("W columns");
        for (row, a_row) in acc.iter_mut().zip(a_rows) {
            let av = a_row[kk];
            for (x, &y) in row.iter_mut().zip(bv) {
                *x = x.add(av.mul(y));
            }
        }
    }
    for (ii, row) in acc.iter().enumerate() {
        c[(i + ii) * nt + j..][..W].copy_from_slice(row);
    }
}

/// One row of `c`, columns `from..nt`, over the depth `kt`.
#[inline]
fn row_update<A: Acc>(a: &[A], b: &[A], c: &mut [A], i: usize, from: usize, nt: usize, kt: usize) {
    let out = &mut c[i * nt + from..(i + 1) * nt];
    let a_row = &a[i * kt..][..kt];
    for (kk, &av) in a_row.iter().enumerate() {
        let b_row = &b[kk * nt + from..(kk + 1) * nt];
        out.iter_mut().zip(b_row).for_each(|(x, &y)| *x = x.add(av.mul(y)));
    }
}
