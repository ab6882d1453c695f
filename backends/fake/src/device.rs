//! One simulated device: its address range, heap, pool, statistics and the
//! streams created on it.
use crate::addr_map::AddrMap;
use crate::config::Config;
use crate::error::{failure, FakeResult};
use crate::heap::Heap;
use crate::lock::IgnorePoison;
use crate::pool::{pool_block_len, Pool, PoolBlock};
use crate::region::Region;
use crate::stream::{Op, Stream};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};
use xdal_abi::xdal_mem_stats_t;

/// Frees of at least this many bytes give their pages back to the OS.
const RELEASE_THRESHOLD: usize = 1 << 20;

pub(crate) struct FakeDevice {
    pub index: usize,
    pub capacity: usize,
    pub region: Region,
    heap: Mutex<Heap>,
    pool: Mutex<Pool>,
    streams: Mutex<AddrMap<u64, Weak<Stream>>>,
    /// Streams of this device that are not idle (queued, running or
    /// blocked), so that an idle device synchronizes in one load.
    pub busy_streams: AtomicU64,
    /// Live streams with a sticky error, so that an idle device with none
    /// synchronizes without visiting its streams.
    pub failed_streams: AtomicU64,
    allocated: AtomicU64,
    peak: AtomicU64,
    num_allocs: AtomicU64,
    num_frees: AtomicU64,
    num_ooms: AtomicU64,
}

impl FakeDevice {
    pub fn new(index: usize, config: &Config) -> FakeResult<FakeDevice> {
        let region = Region::reserve(config.memory_bytes, config.protect)?;
        Ok(FakeDevice {
            index,
            capacity: config.memory_bytes,
            region,
            heap: Mutex::new(Heap::new(config.memory_bytes)),
            pool: Mutex::new(Pool::default()),
            streams: Mutex::new(AddrMap::default()),
            busy_streams: AtomicU64::new(0),
            failed_streams: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            num_allocs: AtomicU64::new(0),
            num_frees: AtomicU64::new(0),
            num_ooms: AtomicU64::new(0),
        })
    }

    pub fn reserved(&self) -> usize {
        self.heap.lock().ignore_poison().used()
    }

    fn count_alloc(&self, requested: usize) {
        let now = self.allocated.fetch_add(requested as u64, Relaxed) + requested as u64;
        self.peak.fetch_max(now, Relaxed);
        self.num_allocs.fetch_add(1, Relaxed);
    }

    fn count_free(&self, requested: usize) {
        self.allocated.fetch_sub(requested as u64, Relaxed);
        self.num_frees.fetch_add(1, Relaxed);
    }

    fn oom(&self, size: usize) -> crate::error::Failure {
        self.num_ooms.fetch_add(1, Relaxed);
        let free = self.capacity - self.reserved();
        failure!(
            XDAL_ERROR_OUT_OF_MEMORY,
            "device {}: cannot allocate {size} bytes ({free} of {} bytes free)",
            self.index,
            self.capacity
        )
    }

    /// Takes `len` bytes from the heap, emptying the pool's ready blocks
    /// into it once if the heap is full.
    fn heap_alloc(&self, len: usize, requested: usize) -> Option<usize> {
        if let Some(offset) = self.heap.lock().ignore_poison().alloc(len, requested) {
            return Some(offset);
        }
        self.empty_cache();
        self.heap.lock().ignore_poison().alloc(len, requested)
    }

    /// Returns a block to the heap; its (length, requested bytes).
    fn heap_free(&self, offset: usize) -> Option<(usize, usize)> {
        let freed = self.heap.lock().ignore_poison().free(offset);
        if let Some((len, _)) = freed {
            if len >= RELEASE_THRESHOLD {
                self.region.release(offset, len);
            }
        }
        freed
    }

    pub fn malloc(&self, size: usize) -> FakeResult<usize> {
        let Some(offset) = Heap::block_len(size).and_then(|len| self.heap_alloc(len, size)) else {
            return Err(self.oom(size));
        };
        self.count_alloc(size);
        Ok(self.region.view_addr(offset))
    }

    /// Frees a plain or pooled allocation at its base. The front has waited
    /// for the device's pending work, which may still use it.
    pub fn free(&self, addr: usize) -> FakeResult<()> {
        let offset = self.region.offset_of(addr);
        let pooled = self.pool.lock().ignore_poison().remove_live(offset);
        match (pooled, self.heap_free(offset)) {
            (Some(block), _) => self.count_free(block.requested),
            (None, Some((_, requested))) => self.count_free(requested),
            (None, None) => {
                return Err(failure!(
                    XDAL_ERROR_INVALID_POINTER,
                    "{addr:#x} is not a live allocation of device {}",
                    self.index
                ))
            }
        }
        Ok(())
    }

    pub fn malloc_async(&self, size: usize, stream: &Arc<Stream>) -> FakeResult<usize> {
        let Some(len) = pool_block_len(size) else {
            return Err(self.oom(size));
        };
        let mut pool = self.pool.lock().ignore_poison();
        let offset = match pool.take(len, stream) {
            Some(offset) => offset,
            None => {
                drop(pool);
                let offset = self.heap_alloc(len, size).ok_or_else(|| self.oom(size))?;
                pool = self.pool.lock().ignore_poison();
                offset
            }
        };
        pool.insert_live(offset, PoolBlock { len, requested: size });
        drop(pool);
        self.count_alloc(size);
        Ok(self.region.view_addr(offset))
    }

    /// Returns a block to the pool at the stream's current point. A plain
    /// allocation is freed once the stream reaches this point.
    pub fn free_async(&'static self, addr: usize, stream: &Arc<Stream>) -> FakeResult<()> {
        let offset = self.region.offset_of(addr);
        let mut pool = self.pool.lock().ignore_poison();
        if pool.is_live(offset) {
            let at = stream.last_enqueued();
            if let Some(block) = pool.release(offset, stream.clone(), at) {
                drop(pool);
                self.count_free(block.requested);
            }
            return Ok(());
        }
        drop(pool);
        stream.enqueue(Op::Task(Box::new(move || {
            if let Some((_, requested)) = self.heap_free(offset) {
                self.count_free(requested);
            }
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
            if let Some((len, _)) = self.heap_free(offset) {
                freed += len;
            }
        }
        self.pool.lock().ignore_poison().forget_cached_bytes(freed);
    }

    pub fn stats(&self) -> xdal_mem_stats_t {
        // One look at the heap, so that the peak is never below `reserved`.
        let (reserved, peak_reserved) = {
            let heap = self.heap.lock().ignore_poison();
            (heap.used(), heap.peak_used())
        };
        xdal_mem_stats_t {
            struct_size: std::mem::size_of::<xdal_mem_stats_t>(),
            allocated_bytes: self.allocated.load(Relaxed),
            reserved_bytes: reserved as u64,
            peak_allocated_bytes: self.peak.load(Relaxed),
            num_allocs: self.num_allocs.load(Relaxed),
            num_frees: self.num_frees.load(Relaxed),
            num_ooms: self.num_ooms.load(Relaxed),
            peak_reserved_bytes: peak_reserved as u64,
        }
    }

    /// Restarts both peaks from the current allocation and reservation.
    pub fn reset_peak(&self) {
        self.peak.store(self.allocated.load(Relaxed), Relaxed);
        self.heap.lock().ignore_poison().reset_peak();
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
