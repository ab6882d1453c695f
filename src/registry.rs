//! The registry of live allocations, device and pinned host, keyed by base
//! address. It answers "which allocation contains this address" for every
//! copy and set, so ranges that leave an allocation are refused before the
//! backend ever sees them.
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::RwLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memory {
    /// Device memory of `device`; `pooled` when it came from `malloc_async`.
    Device { device: c_int, pooled: bool },
    /// Pinned host memory from `malloc_host`.
    Host,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Allocation {
    pub base: usize,
    pub size: usize,
    pub memory: Memory,
}

impl Allocation {
    /// Bytes from `addr` (inside the allocation) to its end.
    pub fn room_after(&self, addr: usize) -> usize {
        self.base + self.size - addr
    }

    pub fn device(&self) -> Option<c_int> {
        match self.memory {
            Memory::Device { device, .. } => Some(device),
            Memory::Host => None,
        }
    }
}

pub(crate) struct Registry {
    map: RwLock<BTreeMap<usize, Allocation>>,
}

impl Registry {
    pub const fn new() -> Registry {
        Registry { map: RwLock::new(BTreeMap::new()) }
    }

    pub fn insert(&self, allocation: Allocation) {
        self.map.write().unwrap_or_else(|e| e.into_inner()).insert(allocation.base, allocation);
    }

    /// Removes the allocation that starts exactly at `base` if `wanted`
    /// accepts it: one step, so two threads freeing the same pointer cannot
    /// both succeed.
    pub fn remove_if(&self, base: usize, wanted: impl FnOnce(&Allocation) -> bool) -> Option<Allocation> {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if !wanted(map.get(&base)?) {
            return None;
        }
        map.remove(&base)
    }

    /// The allocation that contains `addr`, interior addresses included.
    #[inline]
    pub fn find(&self, addr: usize) -> Option<Allocation> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let (_, allocation) = map.range(..=addr).next_back()?;
        (addr - allocation.base < allocation.size).then_some(*allocation)
    }
}

/// Every live allocation of the process.
pub(crate) static REGISTRY: Registry = Registry::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_covers_interior_addresses_only() {
        let registry = Registry::new();
        let memory = Memory::Device { device: 0, pooled: false };
        registry.insert(Allocation { base: 1000, size: 100, memory });
        registry.insert(Allocation { base: 1100, size: 10, memory: Memory::Host });
        assert!(registry.find(999).is_none());
        assert_eq!(registry.find(1000).unwrap().base, 1000);
        assert_eq!(registry.find(1099).unwrap().base, 1000);
        assert_eq!(registry.find(1100).unwrap().memory, Memory::Host);
        assert!(registry.find(1110).is_none());
        assert_eq!(registry.find(1050).unwrap().room_after(1050), 50);
        assert!(registry.remove_if(1050, |_| true).is_none(), "only bases can be removed");
        assert!(registry.remove_if(1000, |a| a.memory == Memory::Host).is_none(), "the predicate is honoured");
        assert!(registry.remove_if(1000, |_| true).is_some());
        assert!(registry.find(1000).is_none());
    }
}
