//! Kernel launches: argument bytes copied at launch, then the grid run
//! block by block. The thread that runs the launch (a worker, or a host
//! thread synchronizing the stream) claims blocks itself, and offers the
//! rest to idle workers of the same executor, so blocks run in parallel
//! without any thread ever waiting on work only another could do.
use crate::error::{failure, Failure, FakeResult};
use crate::lock::IgnorePoison;
use crate::module::FakeFunction;
use crossbeam_queue::SegQueue;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use xdal_abi::{xdal_dim3_t, xdal_kernel_arg_t, xdal_kernel_context_t, xdal_status};
use xdal_backend_support::callback::run_callback;

/// Each argument gets a slot aligned for any scalar type.
const SLOT_ALIGN: usize = 16;
/// Launches with at most this many arguments, in at most `INLINE_WORDS`
/// slots of 16 bytes, keep them inside the launch: no allocation per launch
/// (launch objects are recycled, so the storage costs no more than it
/// takes). 512 bytes hold the 408 of the strided built-ins.
const INLINE_ARGS: usize = 16;
const INLINE_WORDS: usize = 32;

// Inline on purpose: the launch lives in one Arc allocation, and small
// argument lists (nearly all) must not cost a second one.
#[allow(clippy::large_enum_variant)]
enum Bytes {
    Inline([u128; INLINE_WORDS]),
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
    fn empty() -> Args {
        Args { bytes: Bytes::Inline([0; INLINE_WORDS]), offsets: [0; INLINE_ARGS], heap_offsets: Vec::new(), count: 0 }
    }

    /// Copies the arguments into this storage (reused from launch to
    /// launch); 8-byte values that are device addresses are translated to
    /// the backend's alias, so kernels can use them. (An 8-byte scalar is
    /// translated only if its value lies inside a device's reserved address
    /// range, which no count or float bit pattern of a real launch comes
    /// near; and only in protect mode.)
    ///
    /// # Safety
    /// Each `args[i].value` must be readable for `args[i].size` bytes, and
    /// the sizes add up to at most 4096 (the front checks).
    unsafe fn set(&mut self, args: &[xdal_kernel_arg_t]) {
        let total: usize = args.iter().map(|a| a.size.next_multiple_of(SLOT_ALIGN)).sum();
        let words = total / SLOT_ALIGN;
        match &mut self.bytes {
            Bytes::Heap(_) if words <= INLINE_WORDS => self.bytes = Bytes::Inline([0; INLINE_WORDS]),
            Bytes::Heap(storage) => storage.resize(words, 0),
            Bytes::Inline(_) if words > INLINE_WORDS => self.bytes = Bytes::Heap(vec![0u128; words]),
            Bytes::Inline(_) => {}
        }
        let base = match &mut self.bytes {
            Bytes::Inline(words) => words.as_mut_ptr() as *mut u8,
            Bytes::Heap(words) => words.as_mut_ptr() as *mut u8,
        };
        self.heap_offsets.clear();
        let fake = crate::fake();
        let mut offset = 0usize;
        for (i, arg) in args.iter().enumerate() {
            if i < INLINE_ARGS {
                self.offsets[i] = offset as u16;
            } else {
                self.heap_offsets.push(offset as u16);
            }
            if arg.size == 8 {
                // Pointers and counts, nearly every argument: one word, not
                // a copy of a size known only at run time.
                // SAFETY: the caller guarantees 8 readable bytes (of any
                // alignment); the slot is 16-aligned and holds 8 bytes.
                unsafe {
                    let word = (arg.value as *const usize).read_unaligned();
                    (base.add(offset) as *mut usize).write(fake.alias(word));
                }
            } else {
                // SAFETY: the caller guarantees the source; the slot holds
                // `size` bytes at `offset` inside the storage.
                unsafe { std::ptr::copy_nonoverlapping(arg.value as *const u8, base.add(offset), arg.size) };
            }
            offset += arg.size.next_multiple_of(SLOT_ALIGN);
        }
        self.count = args.len();
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

/// Finished launches kept for the next ones: a launch is made by the thread
/// that enqueues it and finished by a worker, and memory allocated on one
/// thread and freed on another is the C allocator's slow path.
static SPARE: SegQueue<Arc<Launch>> = SegQueue::new();

/// Spare launches kept at most (each a few hundred bytes).
const SPARE_MAX: usize = 256;

/// One launch, shared by the threads running its blocks.
pub(crate) struct Launch {
    /// None only while the launch waits in `SPARE`: a spare must not keep a
    /// module loaded.
    function: Option<Arc<FakeFunction>>,
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
    fn blank() -> Launch {
        let one = xdal_dim3_t { x: 1, y: 1, z: 1 };
        Launch {
            function: None,
            grid: one,
            block: one,
            shared_bytes: 0,
            args: Args::empty(),
            total: 0,
            next: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// A launch of `function` with its own copy of `args`, made from a
    /// spare one when there is one.
    ///
    /// # Safety
    /// As for `Args::set`.
    pub unsafe fn prepare(
        function: Arc<FakeFunction>,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> Arc<Launch> {
        let fill = |this: &mut Launch| {
            this.function = Some(function);
            this.grid = grid;
            this.block = block;
            this.shared_bytes = shared_bytes;
            // SAFETY: the caller's contract is `set`'s.
            unsafe { this.args.set(args) };
            this.total = u64::from(grid.x) * u64::from(grid.y) * u64::from(grid.z);
            *this.next.get_mut() = 0;
            *this.done.get_mut() = 0;
            *this.failed.get_mut() = false;
            *this.failure.get_mut().ignore_poison() = None;
        };
        // Spares are pushed only when unshared, so get_mut succeeds.
        if let Some(mut spare) = SPARE.pop() {
            if let Some(this) = Arc::get_mut(&mut spare) {
                fill(this);
                return spare;
            }
        }
        let mut fresh = Launch::blank();
        fill(&mut fresh);
        Arc::new(fresh)
    }

    /// Keeps a finished launch for reuse, if nobody else holds it (a helper
    /// may still be letting go of its reference; then it is simply freed).
    pub fn recycle(mut launch: Arc<Launch>) {
        if let Some(this) = Arc::get_mut(&mut launch) {
            this.function = None;
            if SPARE.len() < SPARE_MAX {
                SPARE.push(launch);
            }
        }
    }

    fn function(&self) -> &FakeFunction {
        self.function.as_deref().expect("a launch being run has its function")
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
        match self.failure.lock().ignore_poison().take() {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    /// Runs the launch again, as a graph replays its kernel node: the same
    /// function, grid and argument bytes. Never while a run is in flight
    /// (the front serializes an exec's runs); helpers still holding the
    /// launch from the last run find no block, or help this one.
    pub fn rerun(self: &Arc<Self>) -> FakeResult<()> {
        self.done.store(0, Relaxed);
        self.failed.store(false, Relaxed);
        *self.failure.lock().ignore_poison() = None;
        // Last, so that no helper claims a block before the rest is reset.
        self.next.store(0, Release);
        self.run()
    }

    /// Claims and runs blocks until none is left, the thread marked as
    /// running a caller's kernel (once for all the blocks it claims, not
    /// per block): a waiting xdal call from inside one is refused.
    pub fn help(&self) {
        run_callback(|| self.run_blocks());
    }

    fn run_blocks(&self) {
        loop {
            let index = self.next.fetch_add(1, Relaxed);
            if index >= self.total {
                return;
            }
            if !self.failed.load(Relaxed) {
                if let Err(failure) = self.run_block(index) {
                    self.failed.store(true, Relaxed);
                    self.failure.lock().ignore_poison().get_or_insert(failure);
                }
            }
            self.done.fetch_add(1, Release);
        }
    }

    fn run_block(&self, index: u64) -> FakeResult<()> {
        let (gx, gy) = (u64::from(self.grid.x), u64::from(self.grid.y));
        let block_idx =
            xdal_dim3_t { x: (index % gx) as u32, y: (index / gx % gy) as u32, z: (index / (gx * gy)) as u32 };
        let run = |shared: &mut Vec<u128>| {
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
            let status = self.args.with_pointers(|args| unsafe { (self.function().kernel)(&ctx, args) });
            if status == xdal_status::XDAL_SUCCESS as i32 {
                return Ok(());
            }
            let name = xdal_status::from_raw(status).map_or("an unknown status", |s| s.name());
            Err(failure!(
                XDAL_ERROR_LAUNCH_FAILED,
                "kernel {} returned {name} in block ({}, {}, {})",
                self.function().name,
                block_idx.x,
                block_idx.y,
                block_idx.z
            ))
        };
        // A thread past its end (its thread-locals destroyed: a launch from
        // an atexit handler, run by the calling thread) takes a buffer of
        // its own.
        SHARED.try_with(|shared| run(&mut shared.borrow_mut())).unwrap_or_else(|_| run(&mut Vec::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static SEEN: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());

    /// Records every argument as a u64 (each test argument is 8 bytes).
    unsafe extern "C" fn record_args(
        _ctx: *const xdal_kernel_context_t,
        args: *const *mut c_void,
    ) -> xdal_abi::xdal_status_raw {
        let count = COUNT.load(SeqCst);
        // SAFETY: the launch passes `count` argument pointers, each to 8 bytes.
        let values = (0..count).map(|i| unsafe { *(*args.add(i) as *const u64) }).collect();
        SEEN.lock().unwrap().push(values);
        0
    }
    static COUNT: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn recycled_launches_carry_only_their_own_arguments_and_no_function() {
        let _ = crate::started().expect("fake backend starts");
        let function = Arc::new(FakeFunction::from_host(record_args));
        let one = xdal_dim3_t { x: 1, y: 1, z: 1 };
        // Alternate inline (2 args) and heap-stored (20 args) argument lists,
        // so that storage is reused in both directions.
        // 40 arguments (640 bytes of slots) spill the bytes to the heap too.
        for (round, count) in [2usize, 20, 2, 40, 20, 3].into_iter().enumerate() {
            let values: Vec<u64> = (0..count as u64).map(|i| 1000 * round as u64 + i).collect();
            let args: Vec<xdal_kernel_arg_t> =
                values.iter().map(|v| xdal_kernel_arg_t { value: (v as *const u64).cast(), size: 8 }).collect();
            // SAFETY: every value is 8 readable bytes.
            let launch = unsafe { Launch::prepare(function.clone(), one, one, 0, &args) };
            COUNT.store(count, SeqCst);
            launch.run().unwrap();
            assert_eq!(SEEN.lock().unwrap().pop().unwrap(), values, "round {round}");
            Launch::recycle(launch);
            // Recycled into the spares or freed: either way the function (and
            // the module it keeps loaded) is no longer held.
            assert_eq!(Arc::strong_count(&function), 1, "a finished launch still holds its function");
        }
    }
}
