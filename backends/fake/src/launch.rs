//! Kernel launches: argument bytes copied at launch, then the grid run
//! block by block. The thread that runs the launch (a worker, or a host
//! thread synchronizing the stream) claims blocks itself, and offers the
//! rest to idle workers of the same executor, so blocks run in parallel
//! without any thread ever waiting on work only another could do.
use crate::error::{failure, Failure, FakeResult};
use crate::module::FakeFunction;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use xdal_abi::{xdal_dim3_t, xdal_kernel_arg_t, xdal_kernel_context_t, xdal_status};

/// Each argument gets a slot aligned for any scalar type.
const SLOT_ALIGN: usize = 16;
/// Launches with at most this many arguments, in at most 16 bytes each on
/// average, keep them inside the launch: no allocation per launch.
const INLINE_ARGS: usize = 16;

// Inline on purpose: the launch lives in one Arc allocation, and small
// argument lists (nearly all) must not cost a second one.
#[allow(clippy::large_enum_variant)]
enum Bytes {
    Inline([u128; INLINE_ARGS]),
    Heap(Vec<u128>),
}

/// The launch's own copy of its arguments.
pub(crate) struct Args {
    bytes: Bytes,
    offsets: [u16; INLINE_ARGS],
    heap_offsets: Vec<u16>,
    count: usize,
}

impl Args {
    /// Copies the arguments; 8-byte values that are device addresses are
    /// translated to the backend's alias, so kernels can use them. (An
    /// 8-byte scalar is translated only if its value lies inside a device's
    /// reserved address range, which no count or float bit pattern of a
    /// real launch comes near; and only in protect mode.)
    ///
    /// # Safety
    /// Each `args[i].value` must be readable for `args[i].size` bytes, and
    /// the sizes add up to at most 4096 (the front checks).
    pub unsafe fn copy(args: &[xdal_kernel_arg_t]) -> Args {
        let total: usize = args.iter().map(|a| a.size.next_multiple_of(SLOT_ALIGN)).sum();
        let words = total / SLOT_ALIGN;
        let mut bytes =
            if words <= INLINE_ARGS { Bytes::Inline([0; INLINE_ARGS]) } else { Bytes::Heap(vec![0u128; words]) };
        let base = match &mut bytes {
            Bytes::Inline(words) => words.as_mut_ptr() as *mut u8,
            Bytes::Heap(words) => words.as_mut_ptr() as *mut u8,
        };
        let mut offsets = [0u16; INLINE_ARGS];
        let mut heap_offsets = Vec::new();
        let fake = crate::fake();
        let mut offset = 0usize;
        for (i, arg) in args.iter().enumerate() {
            if i < INLINE_ARGS {
                offsets[i] = offset as u16;
            } else {
                heap_offsets.push(offset as u16);
            }
            // SAFETY: the caller guarantees the source; the slot holds
            // `size` bytes at `offset` inside the storage.
            unsafe { std::ptr::copy_nonoverlapping(arg.value as *const u8, base.add(offset), arg.size) };
            if arg.size == 8 {
                // SAFETY: the slot is 16-aligned and holds 8 bytes.
                let slot = unsafe { &mut *(base.add(offset) as *mut usize) };
                *slot = fake.alias(*slot);
            }
            offset += arg.size.next_multiple_of(SLOT_ALIGN);
        }
        Args { bytes, offsets, heap_offsets, count: args.len() }
    }

    /// Calls `f` with the array of pointers to the argument copies, built
    /// on the stack (the storage may have moved since `copy`).
    fn with_pointers<R>(&self, f: impl FnOnce(*const *mut c_void) -> R) -> R {
        let base = match &self.bytes {
            Bytes::Inline(words) => words.as_ptr() as *mut u8,
            Bytes::Heap(words) => words.as_ptr() as *mut u8,
        };
        let offsets = self.offsets.iter().take(self.count.min(INLINE_ARGS)).chain(&self.heap_offsets);
        let at = |offset: &u16| {
            // SAFETY: every offset lies inside the storage (set by `copy`).
            unsafe { base.add(*offset as usize) as *mut c_void }
        };
        if self.count <= INLINE_ARGS {
            let mut pointers = [std::ptr::null_mut(); INLINE_ARGS];
            for (slot, offset) in pointers.iter_mut().zip(offsets) {
                *slot = at(offset);
            }
            f(pointers.as_ptr())
        } else {
            let pointers: Vec<*mut c_void> = offsets.map(at).collect();
            f(pointers.as_ptr())
        }
    }
}

/// One launch, shared by the threads running its blocks.
pub(crate) struct Launch {
    function: Arc<FakeFunction>,
    grid: xdal_dim3_t,
    block: xdal_dim3_t,
    shared_bytes: usize,
    args: Args,
    total: u64,
    next: AtomicU64,
    done: AtomicU64,
    failed: AtomicBool,
    failure: Mutex<Option<Failure>>,
}

// SAFETY: the argument bytes are owned by the launch and only read by
// kernels (device pointers among them are plain addresses); the rest is
// atomics and immutable data.
unsafe impl Send for Launch {}
// SAFETY: as above.
unsafe impl Sync for Launch {}

thread_local! {
    /// This thread's shared memory for the block it runs, reused.
    static SHARED: RefCell<Vec<u128>> = const { RefCell::new(Vec::new()) };
}

impl Launch {
    pub fn new(
        function: Arc<FakeFunction>,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_bytes: usize,
        args: Args,
    ) -> Launch {
        let total = u64::from(grid.x) * u64::from(grid.y) * u64::from(grid.z);
        Launch {
            function,
            grid,
            block,
            shared_bytes,
            args,
            total,
            next: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// Runs every block; returns the first failure.
    pub fn run(self: &Arc<Self>) -> FakeResult<()> {
        if self.total > 1 {
            let executor = &crate::fake().executor;
            let helpers = (executor.workers() as u64).min(self.total - 1);
            for _ in 0..helpers {
                executor.offer(self.clone());
            }
        }
        self.help();
        while self.done.load(Acquire) < self.total {
            std::thread::yield_now();
        }
        match self.failure.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    /// Claims and runs blocks until none is left.
    pub fn help(&self) {
        loop {
            let index = self.next.fetch_add(1, Relaxed);
            if index >= self.total {
                return;
            }
            if !self.failed.load(Relaxed) {
                if let Err(failure) = self.run_block(index) {
                    self.failed.store(true, Relaxed);
                    self.failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(failure);
                }
            }
            self.done.fetch_add(1, Release);
        }
    }

    fn run_block(&self, index: u64) -> FakeResult<()> {
        let (gx, gy) = (u64::from(self.grid.x), u64::from(self.grid.y));
        let block_idx =
            xdal_dim3_t { x: (index % gx) as u32, y: (index / gx % gy) as u32, z: (index / (gx * gy)) as u32 };
        SHARED.with(|shared| {
            let mut shared = shared.borrow_mut();
            let words = self.shared_bytes.div_ceil(16);
            if shared.len() < words {
                shared.resize(words, 0);
            }
            let ctx = xdal_kernel_context_t {
                struct_size: std::mem::size_of::<xdal_kernel_context_t>(),
                grid_dim: self.grid,
                block_dim: self.block,
                block_idx,
                shared_mem: if words == 0 { std::ptr::null_mut() } else { shared.as_mut_ptr() as *mut c_void },
                shared_mem_bytes: self.shared_bytes,
            };
            // SAFETY: the kernel has the host-kernel signature; ctx and the
            // argument pointers are valid for the call.
            let status = self.args.with_pointers(|args| unsafe { (self.function.kernel)(&ctx, args) });
            if status == xdal_status::XDAL_SUCCESS as i32 {
                return Ok(());
            }
            let name = xdal_status::from_raw(status).map_or("an unknown status", |s| s.name());
            Err(failure!(
                XDAL_ERROR_LAUNCH_FAILED,
                "kernel {} returned {name} in block ({}, {}, {})",
                self.function.name,
                block_idx.x,
                block_idx.y,
                block_idx.z
            ))
        })
    }
}
