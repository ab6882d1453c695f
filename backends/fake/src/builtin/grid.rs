//! What a built-in kernel learns from its launch: which block it is, the
//! share of the work that block owns, and its arguments; and the guard that
//! turns an error or a panic into the status the kernel returns.
use crate::dtype::DType;
use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::addr_of;
use xdal_abi::{xdal_dim3_t, xdal_kernel_context_t, xdal_status, xdal_status_raw};

/// What a kernel body returns: success, or the status to report.
pub(crate) type KernelResult = Result<(), xdal_status>;

/// This block's place in the grid, linearised x fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// This block's linear index.
    pub index: u128,
    /// Blocks in the grid (up to 2^96, hence `u128`).
    pub count: u128,
}

/// The context must reach at least to the end of `block_idx`.
const CONTEXT_NEEDED: usize = offset_of!(xdal_kernel_context_t, block_idx) + size_of::<xdal_dim3_t>();

impl Block {
    /// Reads the block from a kernel context, reading only fields inside
    /// its `struct_size`.
    ///
    /// # Safety
    /// `ctx` must be NULL or point to a context readable for its
    /// `struct_size` bytes.
    pub unsafe fn from_context(ctx: *const xdal_kernel_context_t) -> Result<Block, xdal_status> {
        if ctx.is_null() {
            return Err(xdal_status::XDAL_ERROR_NULL_POINTER);
        }
        // SAFETY: `ctx` is not NULL and, per the contract, starts with a
        // readable `struct_size`.
        let size = unsafe { addr_of!((*ctx).struct_size).read() };
        if size < CONTEXT_NEEDED {
            return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
        }
        // SAFETY: both fields lie inside the `struct_size` bytes checked
        // just above.
        let (grid, idx) = unsafe { (addr_of!((*ctx).grid_dim).read(), addr_of!((*ctx).block_idx).read()) };
        if idx.x >= grid.x || idx.y >= grid.y || idx.z >= grid.z {
            return Err(xdal_status::XDAL_ERROR_INVALID_VALUE);
        }
        let (gx, gy) = (u128::from(grid.x), u128::from(grid.y));
        Ok(Block {
            index: u128::from(idx.x) + gx * (u128::from(idx.y) + gy * u128::from(idx.z)),
            count: gx * gy * u128::from(grid.z),
        })
    }

    /// Whether this is block 0, the one that does work only one block can.
    pub fn is_first(&self) -> bool {
        self.index == 0
    }

    /// This block's contiguous share of `n` items: the blocks split
    /// `[0, n)` in order into equal runs whose length is a multiple of
    /// `quantum` (so that a run boundary never splits a byte of a packed
    /// type, and falls on a cache line where the quantum is one), the last
    /// runs shorter or empty. Every item belongs to exactly one block.
    pub fn share(&self, n: usize, quantum: usize) -> Range<usize> {
        let n128 = n as u128;
        let quantum = quantum.max(1) as u128;
        let per = n128.div_ceil(self.count).div_ceil(quantum) * quantum;
        let start = (self.index * per).min(n128);
        let end = (start + per).min(n128);
        // Both are at most `n`, which is a `usize`.
        start as usize..end as usize
    }
}

/// Elements of `dtype` in one 64-byte cache line (at least 2, so packed
/// runs start on a byte).
pub(crate) fn line_quantum(dtype: DType) -> usize {
    (512 / dtype.bits() as usize).max(2)
}

/// The arguments of one launch: `args[i]` points to a copy of argument
/// `i`'s bytes, whose sizes the launch path has checked against the
/// kernel's `arg_sizes`.
#[derive(Clone, Copy)]
pub(crate) struct Args(*const *mut c_void);

impl Args {
    /// Wraps the argument array, refusing NULL.
    pub fn new(args: *const *mut c_void) -> Result<Args, xdal_status> {
        if args.is_null() {
            return Err(xdal_status::XDAL_ERROR_NULL_POINTER);
        }
        Ok(Args(args))
    }

    /// Where argument `i`'s bytes are.
    ///
    /// # Safety
    /// The launch must have at least `i + 1` arguments.
    pub unsafe fn bytes(&self, i: usize) -> Result<*const u8, xdal_status> {
        // SAFETY: the caller guarantees entry `i` exists.
        let p = unsafe { *self.0.add(i) };
        if p.is_null() {
            return Err(xdal_status::XDAL_ERROR_NULL_POINTER);
        }
        Ok(p as *const u8)
    }

    /// Argument `i` read as a `T`.
    ///
    /// # Safety
    /// The launch must have at least `i + 1` arguments, argument `i` being
    /// `size_of::<T>()` bytes that are a valid `T`.
    pub unsafe fn get<T: Copy>(&self, i: usize) -> Result<T, xdal_status> {
        // SAFETY: per the contract; the copies need not be aligned.
        Ok(unsafe { self.bytes(i)?.cast::<T>().read_unaligned() })
    }
}

/// Runs a kernel body, turning its error, or a panic, into the status the
/// kernel returns (a panic must not unwind across `extern "C"`).
pub(crate) fn guard(body: impl FnOnce() -> KernelResult) -> xdal_status_raw {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => xdal_status::XDAL_SUCCESS as xdal_status_raw,
        Ok(Err(status)) => status as xdal_status_raw,
        Err(_) => xdal_status::XDAL_ERROR_INTERNAL as xdal_status_raw,
    }
}
