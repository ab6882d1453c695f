//! Handle tables. A handle given to C is a token: a type tag, a slot index
//! and the slot's generation packed into one pointer-sized value. It is
//! never dereferenced; looking it up checks all three, so a destroyed,
//! foreign (another object type) or garbage handle is reported as
//! `XDAL_ERROR_INVALID_HANDLE` instead of becoming a use-after-free.
use std::sync::{Arc, RwLock};

const INDEX_BITS: u32 = 24;
const GENERATION_BITS: u32 = 24;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GENERATION_MASK: u64 = (1 << GENERATION_BITS) - 1;
const TAG_SHIFT: u32 = INDEX_BITS + GENERATION_BITS;

struct Slot<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

/// Live objects of one type, addressed by handle.
pub(crate) struct HandleTable<T> {
    /// Top 16 bits of every handle of this table; never 0, so no handle is
    /// NULL and no user-space pointer looks like one.
    tag: u16,
    inner: RwLock<Slots<T>>,
}

impl<T> HandleTable<T> {
    pub const fn new(tag: u16) -> HandleTable<T> {
        HandleTable { tag, inner: RwLock::new(Slots { slots: Vec::new(), free: Vec::new() }) }
    }

    /// Stores `value`; returns its handle, or None if the table is full.
    pub fn insert(&self, value: Arc<T>) -> Option<usize> {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let index = match inner.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(inner.slots.len()).ok().filter(|&i| u64::from(i) <= INDEX_MASK)?;
                inner.slots.push(Slot { generation: 0, value: None });
                index
            }
        };
        let slot = &mut inner.slots[index as usize];
        slot.value = Some(value);
        Some(self.encode(index, slot.generation))
    }

    /// The object behind `handle`, if it is live and of this table.
    #[inline]
    pub fn get(&self, handle: usize) -> Option<Arc<T>> {
        let (index, generation) = self.decode(handle)?;
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let slot = inner.slots.get(index)?;
        (slot.generation == generation).then(|| slot.value.clone()).flatten()
    }

    /// Removes the object behind `handle`; the handle is invalid from now on.
    pub fn remove(&self, handle: usize) -> Option<Arc<T>> {
        let (index, generation) = self.decode(handle)?;
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let slot = inner.slots.get_mut(index).filter(|s| s.generation == generation)?;
        let value = slot.value.take()?;
        slot.generation = (slot.generation + 1) & GENERATION_MASK as u32;
        inner.free.push(index as u32);
        Some(value)
    }

    /// Every live object.
    pub fn values(&self) -> Vec<Arc<T>> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.slots.iter().filter_map(|s| s.value.clone()).collect()
    }

    fn encode(&self, index: u32, generation: u32) -> usize {
        ((u64::from(self.tag) << TAG_SHIFT) | (u64::from(generation) << INDEX_BITS) | u64::from(index)) as usize
    }

    fn decode(&self, handle: usize) -> Option<(usize, u32)> {
        let handle = handle as u64;
        if handle >> TAG_SHIFT != u64::from(self.tag) {
            return None;
        }
        Some(((handle & INDEX_MASK) as usize, ((handle >> INDEX_BITS) & GENERATION_MASK) as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destroyed_foreign_and_garbage_handles_are_refused() {
        let streams = HandleTable::new(0xA151);
        let events = HandleTable::new(0xA1E7);
        let s = streams.insert(Arc::new(1)).unwrap();
        let e = events.insert(Arc::new(2)).unwrap();
        assert_eq!(streams.get(s).as_deref(), Some(&1));
        assert!(streams.get(e).is_none(), "an event handle is not a stream");
        assert!(streams.get(0).is_none());
        assert!(streams.get(0x12345).is_none());
        assert!(streams.get(usize::MAX).is_none());
        assert_eq!(streams.remove(s).as_deref(), Some(&1));
        assert!(streams.get(s).is_none(), "destroyed");
        assert!(streams.remove(s).is_none(), "destroyed twice");
        // The slot is reused with a new generation: the old handle stays dead.
        let s2 = streams.insert(Arc::new(3)).unwrap();
        assert_ne!(s, s2);
        assert!(streams.get(s).is_none());
        assert_eq!(streams.get(s2).as_deref(), Some(&3));
        assert_eq!(streams.values().len(), 1);
    }
}
