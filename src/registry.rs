//! The registry of live allocations, device and pinned host, keyed by base
//! address. It answers "which allocation contains this address" for every
//! copy and set, so ranges that leave an allocation are refused before the
//! backend ever sees them.
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Live allocations, and freed ones kept as tombstones so that a pool
    /// handing the same block out again flips a hash entry instead of
    /// rebalancing a tree twice. A tombstone never overlaps a live entry:
    /// inserting removes the tombstones it covers.
    map: RwLock<Maps>,
    /// Bumped by every insert and remove: a thread's cached answers are
    /// valid while it has not moved.
    generation: AtomicU64,
    /// Tombstones in `map`.
    tombstones: AtomicU64,
}

/// What an address is, as far as copies and sets care.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// Inside a live allocation.
    Live(Allocation),
    /// In a device's address space but in no live allocation: freed memory.
    DeviceSpace(c_int),
    /// Neither: ordinary host memory.
    Unknown,
}

#[derive(Clone, Copy)]
struct Entry {
    /// `None` for a tombstone.
    allocation: Option<Allocation>,
    /// The size `ranges` records for this base.
    size: usize,
}

/// Every entry twice: by base for exact lookups (frees, reuse), and as
/// base -> size in a tree for "which allocation contains this address".
struct Maps {
    by_base: HashMap<usize, Entry>,
    ranges: BTreeMap<usize, usize>,
}

/// Tombstones beyond this many (plus the live count) are swept at once.
const TOMBSTONE_SLACK: usize = 1024;

#[derive(Clone, Copy)]
struct Recent {
    registry: usize,
    generation: u64,
    lo: usize,
    hi: usize,
    place: Place,
}

/// Entries of each thread's cache of recent answers.
const RECENT: usize = 4;

thread_local! {
    /// The last few addresses this thread asked about: a copy loop over the
    /// same buffers then costs one atomic load per side, not a locked
    /// tree search and a backend call.
    static RECENT_PLACES: RefCell<([Option<Recent>; RECENT], usize)> = const { RefCell::new(([None; RECENT], 0)) };
}

impl Registry {
    pub fn new() -> Registry {
        Registry {
            map: RwLock::new(Maps { by_base: HashMap::new(), ranges: BTreeMap::new() }),
            generation: AtomicU64::new(0),
            tombstones: AtomicU64::new(0),
        }
    }

    pub fn insert(&self, allocation: Allocation) {
        let mut maps = self.map.write().unwrap_or_else(|e| e.into_inner());
        let (base, size) = (allocation.base, allocation.size);
        if let Some(entry) = maps.by_base.get_mut(&base) {
            if entry.allocation.is_none() && entry.size == size {
                // The block a pool took back, handed out again: one flip.
                entry.allocation = Some(allocation);
                self.tombstones.fetch_sub(1, Ordering::Relaxed);
                self.generation.fetch_add(1, Ordering::Release);
                return;
            }
        }
        // Tombstones the new allocation covers, including one that starts
        // before it and reaches into it.
        let covered: Vec<usize> = maps
            .ranges
            .range(..base + size)
            .rev()
            .take_while(|(&b, &len)| b >= base || b + len > base)
            .map(|(&b, _)| b)
            .collect();
        for b in covered {
            if maps.by_base.get(&b).is_some_and(|e| e.allocation.is_none()) {
                maps.by_base.remove(&b);
                maps.ranges.remove(&b);
                self.tombstones.fetch_sub(1, Ordering::Relaxed);
            }
        }
        maps.by_base.insert(base, Entry { allocation: Some(allocation), size });
        maps.ranges.insert(base, size);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Removes the allocation that starts exactly at `base` if `wanted`
    /// accepts it: one step, so two threads freeing the same pointer cannot
    /// both succeed.
    pub fn remove_if(&self, base: usize, wanted: impl FnOnce(&Allocation) -> bool) -> Option<Allocation> {
        let mut maps = self.map.write().unwrap_or_else(|e| e.into_inner());
        let entry = maps.by_base.get_mut(&base)?;
        let allocation = entry.allocation.filter(|a| wanted(a))?;
        entry.allocation = None;
        let tombstones = self.tombstones.fetch_add(1, Ordering::Relaxed) + 1;
        if tombstones as usize > maps.by_base.len() - tombstones as usize + TOMBSTONE_SLACK {
            maps.by_base.retain(|_, e| e.allocation.is_some());
            let Maps { by_base, ranges } = &mut *maps;
            ranges.retain(|b, _| by_base.contains_key(b));
            self.tombstones.store(0, Ordering::Relaxed);
        }
        self.generation.fetch_add(1, Ordering::Release);
        Some(allocation)
    }

    /// What `addr` is; `probe` tells whether an address outside every live
    /// allocation lies in a device's address space. Answers are cached per
    /// thread until the registry changes.
    pub fn place(&self, addr: usize, probe: impl FnOnce(usize) -> Option<c_int>) -> Place {
        let registry = self as *const Registry as usize;
        let generation = self.generation.load(Ordering::Acquire);
        let hit = RECENT_PLACES.with(|recent| {
            recent.borrow().0.iter().flatten().find_map(|r| {
                let valid = r.registry == registry && r.generation == generation;
                (valid && (r.lo..r.hi).contains(&addr)).then_some(r.place)
            })
        });
        if let Some(place) = hit {
            return place;
        }
        let (place, lo, hi) = match self.find(addr) {
            Some(a) => (Place::Live(a), a.base, a.base + a.size),
            None => (probe(addr).map_or(Place::Unknown, Place::DeviceSpace), addr, addr + 1),
        };
        RECENT_PLACES.with(|recent| {
            let (entries, next) = &mut *recent.borrow_mut();
            entries[*next] = Some(Recent { registry, generation, lo, hi, place });
            *next = (*next + 1) % RECENT;
        });
        place
    }

    /// The allocation that contains `addr`, interior addresses included.
    #[inline]
    pub fn find(&self, addr: usize) -> Option<Allocation> {
        // The nearest entry at or below `addr` decides: live entries do not
        // overlap, and no tombstone lies inside a live allocation.
        let maps = self.map.read().unwrap_or_else(|e| e.into_inner());
        let (base, _) = maps.ranges.range(..=addr).next_back()?;
        let allocation = maps.by_base.get(base)?.allocation?;
        (addr - allocation.base < allocation.size).then_some(allocation)
    }
}

/// Every live allocation of the process.
pub(crate) static REGISTRY: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::new);

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
        assert!(matches!(registry.place(1050, |_| None), Place::Live(a) if a.base == 1000));
        assert!(matches!(registry.place(5000, |_| Some(1)), Place::DeviceSpace(1)));
        assert!(matches!(registry.place(5000, |_| None), Place::DeviceSpace(1)), "cached");
        assert!(registry.remove_if(1000, |_| true).is_some());
        assert!(matches!(registry.place(1050, |_| None), Place::Unknown), "the cache is invalidated by a free");
        assert!(registry.remove_if(1000, |_| true).is_none(), "a double free finds nothing");
        // A new allocation over the freed range (starting before it) is found
        // everywhere inside it, the old tombstone notwithstanding.
        registry.insert(Allocation { base: 900, size: 180, memory });
        assert_eq!(registry.find(1050).unwrap().base, 900);
        assert_eq!(registry.find(1079).unwrap().base, 900);
        assert!(registry.find(1080).is_none());
        // The same block handed out again rewrites its tombstone.
        assert!(registry.remove_if(900, |_| true).is_some());
        registry.insert(Allocation { base: 900, size: 180, memory });
        assert_eq!(registry.find(950).unwrap().size, 180);
    }
}
