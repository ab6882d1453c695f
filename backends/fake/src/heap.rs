//! Best-fit sub-allocator over one device's address range. Blocks are
//! multiples of `ALIGN`, so every address it hands out is `ALIGN`-aligned.
use crate::addr_map::AddrMap;
use std::collections::{BTreeMap, BTreeSet};

/// Alignment and granularity of device allocations, as on CUDA.
pub(crate) const ALIGN: usize = 256;

pub(crate) struct Heap {
    free_by_offset: BTreeMap<usize, usize>,
    free_by_len: BTreeSet<(usize, usize)>,
    /// Live blocks: offset -> (block length, bytes the caller asked for).
    live: AddrMap<usize, (usize, usize)>,
    used: usize,
    /// Highest `used` since creation or the last `reset_peak`: the
    /// device's `peak_reserved_bytes`. Kept here, where `used` grows, so
    /// that no growth between two statistics reads is missed.
    peak_used: usize,
}

impl Heap {
    pub fn new(len: usize) -> Heap {
        let len = len / ALIGN * ALIGN;
        let mut heap = Heap {
            free_by_offset: BTreeMap::new(),
            free_by_len: BTreeSet::new(),
            live: AddrMap::default(),
            used: 0,
            peak_used: 0,
        };
        heap.insert_free(0, len);
        heap
    }

    /// Bytes in live blocks.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Highest `used()` since creation or the last `reset_peak`.
    pub fn peak_used(&self) -> usize {
        self.peak_used
    }

    /// Restarts the peak from the bytes in live blocks now.
    pub fn reset_peak(&mut self) {
        self.peak_used = self.used;
    }

    /// The block length an allocation of `size` bytes takes.
    pub fn block_len(size: usize) -> Option<usize> {
        size.checked_next_multiple_of(ALIGN)
    }

    /// Takes a block of exactly `len` bytes (a multiple of `ALIGN`) for a
    /// request of `requested` bytes; returns its offset, or None when no free
    /// range is large enough.
    pub fn alloc(&mut self, len: usize, requested: usize) -> Option<usize> {
        let &(free_len, offset) = self.free_by_len.range((len, 0)..).next()?;
        self.remove_free(offset, free_len);
        if free_len > len {
            self.insert_free(offset + len, free_len - len);
        }
        self.live.insert(offset, (len, requested));
        self.used += len;
        self.peak_used = self.peak_used.max(self.used);
        Some(offset)
    }

    /// The length of the live block at `offset`.
    pub fn block_len_at(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).map(|&(len, _)| len)
    }

    /// The bytes asked for of the live block at `offset`.
    pub fn requested(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).map(|&(_, requested)| requested)
    }

    /// Returns the block at `offset`; its (length, requested bytes), or None
    /// if no block starts there.
    pub fn free(&mut self, offset: usize) -> Option<(usize, usize)> {
        let (len, requested) = self.live.remove(&offset)?;
        self.used -= len;
        let mut start = offset;
        let mut end = offset + len;
        if let Some((&prev, &prev_len)) = self.free_by_offset.range(..offset).next_back() {
            if prev + prev_len == start {
                self.remove_free(prev, prev_len);
                start = prev;
            }
        }
        if let Some(&next_len) = self.free_by_offset.get(&end) {
            self.remove_free(end, next_len);
            end += next_len;
        }
        self.insert_free(start, end - start);
        Some((len, requested))
    }

    fn insert_free(&mut self, offset: usize, len: usize) {
        self.free_by_offset.insert(offset, len);
        self.free_by_len.insert((len, offset));
    }

    fn remove_free(&mut self, offset: usize, len: usize) {
        self.free_by_offset.remove(&offset);
        self.free_by_len.remove(&(len, offset));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_disjoint_and_coalesce() {
        let mut heap = Heap::new(4096);
        let a = heap.alloc(256, 256).unwrap();
        let b = heap.alloc(512, 512).unwrap();
        let c = heap.alloc(256, 256).unwrap();
        assert!(a % ALIGN == 0 && b % ALIGN == 0 && c % ALIGN == 0);
        assert!(a + 256 <= b && b + 512 <= c);
        assert_eq!(heap.used(), 1024);
        assert_eq!(heap.free(b), Some((512, 512)));
        assert_eq!(heap.free(b), None, "a second free of the same block is refused");
        assert_eq!(heap.free(a), Some((256, 256)));
        assert_eq!(heap.free(c), Some((256, 256)));
        // Everything coalesced back: the whole range is one block again.
        assert_eq!(heap.alloc(4096, 4096), Some(0));
        assert_eq!(heap.alloc(256, 256), None);
    }

    #[test]
    fn the_peak_follows_growth_survives_frees_and_resets_to_now() {
        let mut heap = Heap::new(1 << 20);
        assert_eq!(heap.peak_used(), 0);
        let a = heap.alloc(4096, 4000).unwrap();
        let b = heap.alloc(1024, 1024).unwrap();
        assert_eq!(heap.peak_used(), 5120, "block lengths, not requested bytes");
        heap.free(a).unwrap();
        assert_eq!(heap.used(), 1024);
        assert_eq!(heap.peak_used(), 5120, "a free does not lower the peak");
        heap.reset_peak();
        assert_eq!(heap.peak_used(), 1024, "a reset starts from what is live now");
        let c = heap.alloc(512, 512).unwrap();
        assert_eq!(heap.peak_used(), 1536);
        heap.free(b).unwrap();
        heap.free(c).unwrap();
        heap.reset_peak();
        assert_eq!(heap.peak_used(), 0);
    }

    #[test]
    fn exhaustion_returns_none() {
        let mut heap = Heap::new(1024);
        assert!(heap.alloc(1024, 1024).is_some());
        assert!(heap.alloc(256, 256).is_none());
    }
}
