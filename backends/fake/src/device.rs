//! One simulated device: its address range, heap, pool, statistics and the
//! streams created on it.
use crate::addr_map::AddrMap;
use crate::config::Config;
use crate::error::{failure, FakeResult};
use crate::faults::Op as Fault;
use crate::heap::Heap;
use crate::lock::IgnorePoison;
use crate::pool::{pool_block_len, Pool, PoolBlock};
use crate::region::Region;
use crate::stream::{Op, SendPtr, Stream};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};
use xdal_abi::xdal_mem_stats_t;

/// Frees of at least this many bytes give their pages back to the OS
/// (unless poisoned: released pages would read as zeros).
const RELEASE_THRESHOLD: usize = 1 << 20;

/// What `XDAL_FAKE_POISON=1` fills new and freed device memory with: NaN
/// in every float type, -1 in every integer type.
pub(crate) const POISON: u8 = 0xFF;

pub(crate) struct FakeDevice {
    pub index: usize,
    pub capacity: usize,
    pub region: Region,
    /// `XDAL_FAKE_POISON=1`.
    poison: bool,
    /// The heap and the statistics, under one lock: a statistics read is a
    /// snapshot of both, so it always satisfies the invariants
    /// semantics.md states (allocated <= reserved, each peak at least its
    /// current value, peak_reserved >= peak_allocated).
    books: Mutex<Books>,
    pool: Mutex<Pool>,
    streams: Mutex<AddrMap<u64, Weak<Stream>>>,
    /// Streams of this device that are not idle (queued, running or
    /// blocked), so that an idle device synchronizes in one load.
    pub busy_streams: AtomicU64,
    /// Live streams with a sticky error, so that an idle device with none
    /// synchronizes without visiting its streams.
    pub failed_streams: AtomicU64,
}

/// Which free `FakeDevice::heap_free` counts.
#[derive(Clone, Copy)]
enum Count {
    /// The heap block's own requested bytes: a plain allocation.
    Block,
    /// A pool block of these requested bytes leaving the pool for good.
    Pooled(usize),
    /// None: counted already (a cached pool block, a `free_async`).
    No,
}

/// What `FakeDevice::books` guards.
struct Books {
    heap: Heap,
    /// Bytes callers asked for in live allocations (pool blocks freed
    /// with `free_async` left the count at the call).
    allocated: u64,
    peak_allocated: u64,
    num_allocs: u64,
    num_frees: u64,
    num_ooms: u64,
}

impl Books {
    fn count_alloc(&mut self, requested: usize) {
        self.allocated += requested as u64;
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        self.num_allocs += 1;
    }

    fn count_free(&mut self, requested: usize) {
        self.allocated -= requested as u64;
        self.num_frees += 1;
    }
}

impl FakeDevice {
    pub fn new(index: usize, config: &Config) -> FakeResult<FakeDevice> {
        let region = Region::reserve(config.memory_bytes, config.protect)?;
        Ok(FakeDevice {
            index,
            capacity: config.memory_bytes,
            region,
            poison: config.poison,
            books: Mutex::new(Books {
                heap: Heap::new(config.memory_bytes),
                allocated: 0,
                peak_allocated: 0,
                num_allocs: 0,
                num_frees: 0,
                num_ooms: 0,
            }),
            pool: Mutex::new(Pool::default()),
            streams: Mutex::new(AddrMap::default()),
            busy_streams: AtomicU64::new(0),
            failed_streams: AtomicU64::new(0),
        })
    }

    pub fn reserved(&self) -> usize {
        self.books.lock().ignore_poison().heap.used()
    }

    fn oom(&self, size: usize) -> crate::error::Failure {
        let free = {
            let mut books = self.books.lock().ignore_poison();
            books.num_ooms += 1;
            self.capacity - books.heap.used()
        };
        failure!(
            XDAL_ERROR_OUT_OF_MEMORY,
            "device {}: cannot allocate {size} bytes ({free} of {} bytes free)",
            self.index,
            self.capacity
        )
    }

    /// Takes `len` bytes from the heap for an allocation of `requested`
    /// bytes and counts it, emptying the pool's ready blocks into the heap
    /// once if it is full.
    fn heap_alloc(&self, len: usize, requested: usize) -> Option<usize> {
        let take = || {
            let mut books = self.books.lock().ignore_poison();
            let offset = books.heap.alloc(len, requested)?;
            books.count_alloc(requested);
            Some(offset)
        };
        if let Some(offset) = take() {
            return Some(offset);
        }
        self.empty_cache();
        take()
    }

    /// Returns a block to the heap, counting the free as `count` says, in
    /// the same step; the block's (length, requested bytes).
    fn heap_free(&self, offset: usize, count: Count) -> Option<(usize, usize)> {
        if self.poison {
            if let Some(len) = self.books.lock().ignore_poison().heap.block_len_at(offset) {
                self.region.fill(offset, len, POISON);
            }
        }
        let freed = {
            let mut books = self.books.lock().ignore_poison();
            let freed = books.heap.free(offset);
            match (count, freed) {
                (Count::Block, Some((_, requested))) | (Count::Pooled(requested), Some(_)) => {
                    books.count_free(requested)
                }
                _ => {}
            }
            freed
        };
        if let Some((len, _)) = freed {
            if len >= RELEASE_THRESHOLD && !self.poison {
                self.region.release(offset, len);
            }
        }
        freed
    }

    /// Fails the allocation when fault injection says so, counted as an
    /// out-of-memory.
    fn injected_oom(&self) -> FakeResult<()> {
        crate::fake().faults.check(Fault::Alloc).inspect_err(|_| self.books.lock().ignore_poison().num_ooms += 1)
    }

    /// The user address of a new block, poisoned if asked.
    fn hand_out(&self, offset: usize, len: usize) -> usize {
        if self.poison {
            self.region.fill(offset, len, POISON);
        }
        self.region.view_addr(offset)
    }

    pub fn malloc(&self, size: usize) -> FakeResult<usize> {
        self.injected_oom()?;
        let len = Heap::block_len(size).ok_or_else(|| self.oom(size))?;
        let offset = self.heap_alloc(len, size).ok_or_else(|| self.oom(size))?;
        Ok(self.hand_out(offset, len))
    }

    /// Frees a plain or pooled allocation at its base. The front has waited
    /// for the device's pending work, which may still use it.
    pub fn free(&self, addr: usize) -> FakeResult<()> {
        let offset = self.region.offset_of(addr);
        let pooled = self.pool.lock().ignore_poison().remove_live(offset);
        let count = pooled.map_or(Count::Block, |block| Count::Pooled(block.requested));
        if self.heap_free(offset, count).is_none() {
            return Err(failure!(
                XDAL_ERROR_INVALID_POINTER,
                "{addr:#x} is not a live allocation of device {}",
                self.index
            ));
        }
        Ok(())
    }

    pub fn malloc_async(&self, size: usize, stream: &Arc<Stream>) -> FakeResult<usize> {
        self.injected_oom()?;
        let Some(len) = pool_block_len(size) else {
            return Err(self.oom(size));
        };
        let block = PoolBlock { len, requested: size };
        let mut pool = self.pool.lock().ignore_poison();
        if let Some(offset) = pool.take(len, stream) {
            pool.insert_live(offset, block);
            drop(pool);
            self.books.lock().ignore_poison().count_alloc(size);
            return Ok(self.hand_out(offset, len));
        }
        drop(pool);
        // Counted by `heap_alloc`.
        let offset = self.heap_alloc(len, size).ok_or_else(|| self.oom(size))?;
        self.pool.lock().ignore_poison().insert_live(offset, block);
        Ok(self.hand_out(offset, len))
    }

    /// Returns a block to the pool at the stream's current point; a plain
    /// allocation goes back to the heap once the stream reaches this
    /// point. Either way the caller's bytes leave `allocated_bytes` now,
    /// at the call (semantics.md); the reservation lasts until the block
    /// is reusable.
    pub fn free_async(&'static self, addr: usize, stream: &Arc<Stream>) -> FakeResult<()> {
        let offset = self.region.offset_of(addr);
        let mut pool = self.pool.lock().ignore_poison();
        if pool.is_live(offset) {
            if self.poison {
                // In stream order, after the work that may still use it.
                let len = pool.live_len(offset).unwrap_or(0);
                let dst = SendPtr(self.region.alias_of(self.region.view_addr(offset)) as *mut std::ffi::c_void);
                stream.enqueue(Op::Set { dst, value: POISON, len });
            }
            let at = stream.last_enqueued();
            if let Some(block) = pool.release(offset, stream.clone(), at) {
                drop(pool);
                self.books.lock().ignore_poison().count_free(block.requested);
            }
            return Ok(());
        }
        drop(pool);
        {
            let mut books = self.books.lock().ignore_poison();
            let Some(requested) = books.heap.requested(offset) else {
                return Err(failure!(
                    XDAL_ERROR_INVALID_POINTER,
                    "{addr:#x} is not a live allocation of device {}",
                    self.index
                ));
            };
            books.count_free(requested);
        }
        stream.enqueue(Op::Task(Box::new(move || {
            self.heap_free(offset, Count::No);
            Ok(())
        })));
        Ok(())
    }

    /// Gives every cached pool block whose stream is past its free back to
    /// the heap.
    pub fn empty_cache(&self) {
        let ready = self.pool.lock().ignore_poison().drain_ready();
        let mut freed = 0;
        for offset in ready {
            if let Some((len, _)) = self.heap_free(offset, Count::No) {
                freed += len;
            }
        }
        self.pool.lock().ignore_poison().forget_cached_bytes(freed);
    }

    /// The statistics, all read in one step.
    pub fn stats(&self) -> xdal_mem_stats_t {
        let books = self.books.lock().ignore_poison();
        xdal_mem_stats_t {
            struct_size: std::mem::size_of::<xdal_mem_stats_t>(),
            allocated_bytes: books.allocated,
            reserved_bytes: books.heap.used() as u64,
            peak_allocated_bytes: books.peak_allocated,
            num_allocs: books.num_allocs,
            num_frees: books.num_frees,
            num_ooms: books.num_ooms,
            peak_reserved_bytes: books.heap.peak_used() as u64,
        }
    }

    /// Restarts both peaks from the current allocation and reservation, in
    /// one step.
    pub fn reset_peak(&self) {
        let mut books = self.books.lock().ignore_poison();
        books.peak_allocated = books.allocated;
        books.heap.reset_peak();
    }

    pub fn add_stream(&self, stream: &Arc<Stream>) {
        self.streams.lock().ignore_poison().insert(stream.id(), Arc::downgrade(stream));
    }

    pub fn forget_stream(&self, id: u64) {
        self.streams.lock().ignore_poison().remove(&id);
    }

    fn live_streams(&self) -> Vec<Arc<Stream>> {
        self.streams.lock().ignore_poison().values().filter_map(Weak::upgrade).collect()
    }

    /// Waits for every stream of the device; returns the first sticky error.
    pub fn synchronize(&self) -> FakeResult<()> {
        if self.busy_streams.load(SeqCst) == 0 && self.failed_streams.load(SeqCst) == 0 {
            return Ok(());
        }
        let mut first_error = Ok(());
        for stream in self.live_streams() {
            // A destroyed stream's work is waited for; its error is gone
            // with its handle.
            if let Err(e) = stream.synchronize().or_else(|e| if stream.is_destroyed() { Ok(()) } else { Err(e) }) {
                first_error = first_error.and(Err(e));
            }
        }
        first_error
    }
}
