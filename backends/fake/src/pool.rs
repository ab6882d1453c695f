//! The stream-ordered pool behind `malloc_async`/`free_async`. A block freed
//! on stream S at point p may be handed out again at once to work on S
//! (stream order protects it), and to any other stream once S has passed p.
//! Blocks are grouped by rounded length, so a hit is a short scan of one bin.
use crate::addr_map::AddrMap;
use crate::stream::Stream;
use std::sync::Arc;

/// Rounds a request to the pool's block length: 512-byte steps up to 1 MiB,
/// 128 KiB steps above, so that close sizes share blocks.
pub(crate) fn pool_block_len(size: usize) -> Option<usize> {
    let step = if size <= 1 << 20 { 512 } else { 128 << 10 };
    size.checked_next_multiple_of(step)
}

struct Cached {
    offset: usize,
    freed_on: Arc<Stream>,
    freed_at: u64,
}

/// A live pool block: its heap length and the size the caller asked for.
#[derive(Clone, Copy)]
pub(crate) struct PoolBlock {
    pub len: usize,
    pub requested: usize,
}

#[derive(Default)]
pub(crate) struct Pool {
    bins: AddrMap<usize, Vec<Cached>>,
    live: AddrMap<usize, PoolBlock>,
    cached_bytes: usize,
}

impl Pool {
    /// Takes a cached block of `len` bytes usable by work on `stream`.
    pub fn take(&mut self, len: usize, stream: &Arc<Stream>) -> Option<usize> {
        let bin = self.bins.get_mut(&len)?;
        let index = bin.iter().rposition(|c| Arc::ptr_eq(&c.freed_on, stream) || c.freed_on.passed(c.freed_at))?;
        let cached = bin.swap_remove(index);
        self.cached_bytes -= len;
        Some(cached.offset)
    }

    pub fn insert_live(&mut self, offset: usize, block: PoolBlock) {
        self.live.insert(offset, block);
    }

    /// The heap length of the live block at `offset`.
    pub fn live_len(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).map(|block| block.len)
    }

    pub fn is_live(&self, offset: usize) -> bool {
        self.live.contains_key(&offset)
    }

    /// Forgets a live block that leaves the pool for good (a plain free).
    pub fn remove_live(&mut self, offset: usize) -> Option<PoolBlock> {
        self.live.remove(&offset)
    }

    /// Moves a live block into the cache, reusable after `stream` passes `at`.
    pub fn release(&mut self, offset: usize, stream: Arc<Stream>, at: u64) -> Option<PoolBlock> {
        let block = self.live.remove(&offset)?;
        self.bins.entry(block.len).or_default().push(Cached { offset, freed_on: stream, freed_at: at });
        self.cached_bytes += block.len;
        Some(block)
    }

    /// Removes every cached block whose stream has passed its free; returns
    /// their offsets for the heap to take back.
    pub fn drain_ready(&mut self) -> Vec<usize> {
        let mut out = Vec::new();
        for bin in self.bins.values_mut() {
            bin.retain(|c| {
                if c.freed_on.passed(c.freed_at) {
                    out.push(c.offset);
                    false
                } else {
                    true
                }
            });
        }
        self.bins.retain(|_, bin| !bin.is_empty());
        out
    }

    pub fn forget_cached_bytes(&mut self, bytes: usize) {
        self.cached_bytes -= bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_lengths_round_up() {
        assert_eq!(pool_block_len(1), Some(512));
        assert_eq!(pool_block_len(4096), Some(4096));
        assert_eq!(pool_block_len(4097), Some(4608));
        assert_eq!(pool_block_len((1 << 20) + 1), Some((1 << 20) + (128 << 10)));
        assert_eq!(pool_block_len(usize::MAX), None);
    }
}
