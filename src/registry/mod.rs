//! The registry of live allocations, device and pinned host, keyed by base
//! address. It answers "which allocation contains this address" for every
//! copy and set, so ranges that leave an allocation are refused before the
//! backend ever sees them.
use crate::lock::IgnorePoison;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_int;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;
use xdal_abi::xdal_memory_type;

/// Which memory an address is in, as `xdal_memory_type_t` names it: the
/// one answer that copies (the side of each pointer), sets, frees and
/// pointer attributes ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryType {
    /// Not xdal's: ordinary host memory.
    Unregistered,
    /// Pinned host memory from `xdal_malloc_host`.
    Host,
    /// Memory of a device.
    Device(c_int),
}

impl MemoryType {
    #[inline]
    pub fn is_device(self) -> bool {
        matches!(self, MemoryType::Device(_))
    }

    /// The device, for device memory.
    #[inline]
    pub fn device(self) -> Option<c_int> {
        match self {
            MemoryType::Device(device) => Some(device),
            _ => None,
        }
    }

    /// The type and device `xdal_pointer_attributes_t` reports.
    pub fn to_abi(self) -> (xdal_memory_type, c_int) {
        match self {
            MemoryType::Unregistered => (xdal_memory_type::XDAL_MEMORY_TYPE_UNREGISTERED, -1),
            MemoryType::Host => (xdal_memory_type::XDAL_MEMORY_TYPE_HOST, -1),
            MemoryType::Device(device) => (xdal_memory_type::XDAL_MEMORY_TYPE_DEVICE, device),
        }
    }
}

/// A live allocation: device memory (`xdal_malloc`, `xdal_malloc_async`)
/// or pinned host memory; never `MemoryType::Unregistered`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allocation {
    pub base: usize,
    pub size: usize,
    pub memory: MemoryType,
}

impl Allocation {
    /// Bytes from `addr` (inside the allocation) to its end.
    pub fn room_after(&self, addr: usize) -> usize {
        self.base + self.size - addr
    }
}

pub(crate) struct Registry {
    /// Live allocations, and freed ones kept as tombstones so that a pool
    /// handing the same block out again flips a hash entry instead of
    /// rebalancing a tree twice. A tombstone never overlaps a live entry:
    /// inserting removes the tombstones it covers.
    map: RwLock<Maps>,
    /// What a thread's cached answers are checked against, each counter
    /// bumped under the write lock. A remove changes only the answers about
    /// the allocation it removes: it bumps the counter of that allocation's
    /// bucket (by base), and a cached answer about a live allocation holds
    /// while its bucket's counter has not moved. An insert changes only
    /// answers about addresses outside every allocation (it may cover
    /// them): it bumps `inserts`, which those answers are checked against.
    /// So a thread that allocates and frees as it launches (torch_xdal's
    /// results) keeps its answers about the other operands.
    removals: [AtomicU64; REMOVAL_BUCKETS],
    inserts: AtomicU64,
    /// Tombstones in `map`.
    tombstones: AtomicUsize,
}

/// What an address is, as far as copies and sets care.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// Inside a live allocation.
    Allocated(Allocation),
    /// In a device's address space but in no live allocation: freed memory.
    Freed(c_int),
    /// Neither: ordinary host memory (`MemoryType::Unregistered`).
    Unregistered,
}

#[derive(Clone, Copy)]
struct Entry {
    /// `None` for a tombstone.
    allocation: Option<Allocation>,
    /// The size `ranges` records for this base.
    size: usize,
    /// Which insert made the allocation (the `inserts` count it took): an
    /// allocation freed and made again at the same base is another one.
    serial: u64,
}

/// Which live allocation holds an address, and what proves it has not
/// been freed since (`Registry::still_live`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Identity {
    pub allocation: Allocation,
    serial: u64,
    bucket: usize,
    stamp: u64,
}

/// Every entry twice: by base for exact lookups (frees, reuse), and as
/// base -> size in a tree for "which allocation contains this address".
struct Maps {
    by_base: HashMap<usize, Entry, BuildHasherDefault<AddressHasher>>,
    ranges: BTreeMap<usize, usize>,
}

/// The registry's hash of a base address. The map is the front's own,
/// keyed by addresses the backends gave, so it needs no protection against
/// chosen keys (SipHash cost several percent of a small launch): one
/// multiplication, its 128-bit product folded, spreads the aligned
/// addresses' bits over all 64.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        let product = u128::from(self.0 ^ value) * 0x9E37_79B9_7F4A_7C15;
        // Both halves of the product (the high one is the well-mixed one):
        // the truncations are the point.
        #[allow(clippy::cast_possible_truncation)]
        let (low, high) = (product as u64, (product >> 64) as u64);
        self.0 = low ^ high;
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        // 64-bit pointers: see the handle tables' assertion.
        self.write_u64(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Buckets of `Registry::removals`: a remove voids the cached answers
/// about the allocations of one bucket in this many.
const REMOVAL_BUCKETS: usize = 64;

/// The bucket of the allocation at `base`.
#[inline]
fn removal_bucket(base: usize) -> usize {
    // Bases are at least 256-byte aligned; the product's top bits mix them.
    ((base as u64 >> 8).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize
}

/// Tombstones beyond this many (plus the live count) are swept at once.
const TOMBSTONE_SLACK: usize = 1024;

/// Entries of each thread's cache of recent answers.
const RECENT: usize = 4;

/// One cached answer, in the fewest bytes a check has to read: every
/// address in `[lo, lo + len)` is `memory_type()` memory, and a range
/// starting at `lo + offset` may take `bound - offset` bytes: the
/// allocation's end for live allocations, the address space's for
/// ordinary host memory, and nothing for freed device memory, whose refusal the slow
/// path explains (`len` is 1 for both kinds of address outside the
/// allocations). A copy's check then needs one subtraction and two
/// compares per side.
#[derive(Clone, Copy)]
struct Recent {
    lo: usize,
    len: usize,
    bound: usize,
    /// The memory type, packed: a device index, or one of the negative
    /// codes below.
    memory: c_int,
    /// What the answer holds while: the removal bucket of its allocation,
    /// or `OUTSIDE` for an address outside every allocation (checked
    /// against `inserts`); and that counter's value when it was given.
    bucket: usize,
    stamp: u64,
}

/// `Recent::bucket` of an answer about an address outside every
/// allocation.
const OUTSIDE: usize = usize::MAX;

/// An entry no address is in.
const EMPTY: Recent = Recent { lo: 0, len: 0, bound: 0, memory: Recent::UNREGISTERED, bucket: OUTSIDE, stamp: 0 };

impl Recent {
    const UNREGISTERED: c_int = -1;
    const HOST: c_int = -2;

    fn of(place: Place, lo: usize, len: usize, (bucket, stamp): (usize, u64)) -> Recent {
        let (bound, memory) = match place {
            Place::Allocated(Allocation { memory: MemoryType::Device(device), .. }) => (len, device),
            Place::Allocated(_) => (len, Self::HOST),
            // Ordinary host memory: any range that ends inside the address
            // space (one that wraps past its end is the slow path's refusal).
            Place::Unregistered => (usize::MAX - lo, Self::UNREGISTERED),
            Place::Freed(_) => (0, Self::UNREGISTERED),
        };
        Recent { lo, len, bound, memory, bucket, stamp }
    }

    /// Whether the answer still holds in `registry` (the one it came from).
    #[inline]
    fn holds(self, registry: &Registry) -> bool {
        let counter = match self.bucket {
            OUTSIDE => &registry.inserts,
            bucket => &registry.removals[bucket],
        };
        counter.load(Ordering::Acquire) == self.stamp
    }

    #[inline]
    fn memory_type(self) -> MemoryType {
        match self.memory {
            device if device >= 0 => MemoryType::Device(device),
            Self::HOST => MemoryType::Host,
            _ => MemoryType::Unregistered,
        }
    }
}

/// Each thread's last few answers, all given by the registry at `key`,
/// each valid while `Recent::holds`.
struct RecentPlaces {
    key: Cell<usize>,
    entries: [Cell<Recent>; RECENT],
    /// The full answer of each entry, for `place`.
    places: [Cell<Place>; RECENT],
    next: Cell<usize>,
}

thread_local! {
    /// A copy loop over the same buffers then costs one atomic load and a
    /// few compares per side, not a locked tree search and a backend call.
    /// No registry is at address 0: the entries start void.
    static RECENT_PLACES: RecentPlaces = const {
        RecentPlaces {
            key: Cell::new(0),
            entries: [const { Cell::new(EMPTY) }; RECENT],
            places: [const { Cell::new(Place::Unregistered) }; RECENT],
            next: Cell::new(0),
        }
    };
}

impl Registry {
    /// Empty; `const`, so that the process's registry is a plain static
    /// and a check reaches it without a lazy initialization's test.
    pub const fn new() -> Registry {
        Registry {
            map: RwLock::new(Maps {
                by_base: HashMap::with_hasher(BuildHasherDefault::new()),
                ranges: BTreeMap::new(),
            }),
            removals: [const { AtomicU64::new(0) }; REMOVAL_BUCKETS],
            inserts: AtomicU64::new(0),
            tombstones: AtomicUsize::new(0),
        }
    }

    /// Registers `allocation`, and gives the calling thread's cache the
    /// answer about it: the thread that allocates is the one that uses the
    /// memory next (a framework's result, checked at the launch that
    /// writes it), whose first check would otherwise take the locked
    /// search.
    pub fn insert(&self, allocation: Allocation) {
        let mut maps = self.map.write().ignore_poison();
        self.insert_into(&mut maps, allocation);
        // What the answer holds while, read under the lock that made it
        // true: a later removal moves the counter read here.
        let bucket = removal_bucket(allocation.base);
        let validity = (bucket, self.removals[bucket].load(Ordering::Acquire));
        drop(maps);
        self.remember(Place::Allocated(allocation), allocation.base, allocation.size, validity);
    }

    fn insert_into(&self, maps: &mut Maps, allocation: Allocation) {
        let (base, size) = (allocation.base, allocation.size);
        if let Some(entry) = maps.by_base.get_mut(&base) {
            if entry.allocation.is_none() && entry.size == size {
                // The block a pool took back, handed out again: one flip.
                entry.allocation = Some(allocation);
                entry.serial = self.inserts.fetch_add(1, Ordering::Release);
                self.tombstones.fetch_sub(1, Ordering::Relaxed);
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
        let serial = self.inserts.fetch_add(1, Ordering::Release);
        maps.by_base.insert(base, Entry { allocation: Some(allocation), size, serial });
        maps.ranges.insert(base, size);
    }

    /// Removes the allocation that starts exactly at `base` if `wanted`
    /// accepts it: one step, so two threads freeing the same pointer cannot
    /// both succeed.
    pub fn remove_if(&self, base: usize, wanted: impl FnOnce(&Allocation) -> bool) -> Option<Allocation> {
        let mut maps = self.map.write().ignore_poison();
        let entry = maps.by_base.get_mut(&base)?;
        let allocation = entry.allocation.filter(|a| wanted(a))?;
        entry.allocation = None;
        let tombstones = self.tombstones.fetch_add(1, Ordering::Relaxed) + 1;
        if tombstones > maps.by_base.len() - tombstones + TOMBSTONE_SLACK {
            maps.by_base.retain(|_, e| e.allocation.is_some());
            let Maps { by_base, ranges } = &mut *maps;
            ranges.retain(|b, _| by_base.contains_key(b));
            self.tombstones.store(0, Ordering::Relaxed);
        }
        self.removals[removal_bucket(base)].fetch_add(1, Ordering::Release);
        Some(allocation)
    }

    /// What `addr` is; `probe` tells whether an address outside every live
    /// allocation lies in a device's address space. Answers are cached per
    /// thread until the registry changes.
    pub fn place(&self, addr: usize, probe: impl FnOnce(usize) -> Option<c_int>) -> Place {
        let key = self.key();
        let hit = RECENT_PLACES.with(|recent| {
            let i = (recent.key.get() == key).then(|| Self::recent_index(recent, addr)).flatten()?;
            recent.entries[i].get().holds(self).then(|| recent.places[i].get())
        });
        if let Some(place) = hit {
            return place;
        }
        let (found, validity) = self.find_with_validity(addr);
        let (place, lo, hi) = match found {
            Some(a) => (Place::Allocated(a), a.base, a.base + a.size),
            None => (probe(addr).map_or(Place::Unregistered, Place::Freed), addr, addr + 1),
        };
        self.remember(place, lo, hi - lo, validity);
        place
    }

    /// Puts an answer about `[lo, lo + len)` into the calling thread's
    /// cache, in place of an answer that no longer holds if there is one
    /// (a result freed since: a loop that allocates a result per operation
    /// then keeps its operands' answers), else of the oldest.
    fn remember(&self, place: Place, lo: usize, len: usize, validity: (usize, u64)) {
        let key = self.key();
        RECENT_PLACES.with(|recent| {
            if recent.key.replace(key) != key {
                recent.entries.iter().for_each(|entry| entry.set(EMPTY));
            }
            let stale = recent.entries.iter().position(|entry| {
                let entry = entry.get();
                entry.len == 0 || !entry.holds(self)
            });
            let i = stale.unwrap_or_else(|| recent.next.replace((recent.next.get() + 1) % RECENT));
            recent.entries[i].set(Recent::of(place, lo, len, validity));
            recent.places[i].set(place);
        });
    }

    /// This registry: whose answers a thread's cache holds.
    #[inline]
    fn key(&self) -> usize {
        self as *const Registry as usize
    }

    /// The entry of `recent` that covers `addr`.
    #[inline]
    fn recent_index(recent: &RecentPlaces, addr: usize) -> Option<usize> {
        recent.entries.iter().position(|entry| {
            let Recent { lo, len, .. } = entry.get();
            addr.wrapping_sub(lo) < len
        })
    }

    /// The fast path of a copy's check, from this thread's cache only: the
    /// memory type of each of `addrs`, where `bytes` from it lie in one
    /// memory (inside one live allocation, or in ordinary host memory).
    /// None when the cache has no answer for one of them, or the answer is
    /// a refusal (then `place` decides, and says why). Nothing of `Place`
    /// is built, and both sides of a copy take one look at the thread's
    /// cache.
    #[inline]
    pub fn cached_sides<const N: usize>(&self, addrs: [usize; N], bytes: usize) -> Option<[MemoryType; N]> {
        self.with_recent(|recent| {
            let mut sides = [MemoryType::Unregistered; N];
            for (side, &addr) in sides.iter_mut().zip(&addrs) {
                *side = self.cached_side_in(recent, addr, bytes)?;
            }
            Some(sides)
        })
    }

    /// The fast path of a set's check, from this thread's cache only: the
    /// device whose live allocation holds all of the `bytes` (non-zero)
    /// bytes at `addr`. None when the cache cannot tell, or the range is
    /// not device memory (then `place` decides, and says why).
    #[inline]
    pub fn cached_device(&self, addr: usize, bytes: usize) -> Option<c_int> {
        self.with_recent(|recent| self.cached_side_in(recent, addr, bytes)?.device())
    }

    /// The fast path of a built-in launch's check, from this thread's
    /// cache only, with one look at it for all the ranges: true when each
    /// non-empty `(address, bytes)` of `ranges` lies inside one live
    /// allocation of `device`. False says only that the cache cannot
    /// tell; the caller then checks range by range, and explains a refusal.
    #[inline]
    pub fn cached_on_device(&self, ranges: impl IntoIterator<Item = (usize, usize)>, device: c_int) -> bool {
        self.with_recent(|recent| {
            ranges
                .into_iter()
                .filter(|&(_, bytes)| bytes != 0)
                .all(|(addr, bytes)| self.cached_side_in(recent, addr, bytes) == Some(MemoryType::Device(device)))
                .then_some(())
        })
        .is_some()
    }

    /// `f` over the calling thread's cache, if its answers are this
    /// registry's (None otherwise): one thread-local access for a whole
    /// check. Through `try_with`, which is inlined where `with` was not: the
    /// cache's accessor was then called through a pointer, about 20
    /// instructions of every check (the cache is a constant with nothing to
    /// drop, so the access never fails).
    #[inline]
    fn with_recent<R>(&self, f: impl FnOnce(&RecentPlaces) -> Option<R>) -> Option<R> {
        let key = self.key();
        RECENT_PLACES.try_with(|recent| if recent.key.get() == key { f(recent) } else { None }).ok().flatten()
    }

    #[inline]
    fn cached_side_in(&self, recent: &RecentPlaces, addr: usize, bytes: usize) -> Option<MemoryType> {
        let entry = recent.entries[Self::recent_index(recent, addr)?].get();
        if !entry.holds(self) {
            return None;
        }
        // `bound - offset` cannot overflow: a live allocation's bound is its
        // length, host memory's reaches the address space's end (its entry
        // is one byte wide, offset 0), and freed memory's entry is
        // one byte wide (offset 0). `bytes - 1`: an empty range is never
        // answered here (freed memory's bound of 0 would let it through).
        (bytes.wrapping_sub(1) < entry.bound - (addr - entry.lo)).then(|| entry.memory_type())
    }

    /// The allocation that contains `addr`, interior addresses included.
    #[inline]
    pub fn find(&self, addr: usize) -> Option<Allocation> {
        let maps = self.map.read().ignore_poison();
        Self::find_in(&maps, addr)
    }

    fn find_in(maps: &Maps, addr: usize) -> Option<Allocation> {
        // The nearest entry at or below `addr` decides: live entries do not
        // overlap, and no tombstone lies inside a live allocation.
        let (base, _) = maps.ranges.range(..=addr).next_back()?;
        let allocation = maps.by_base.get(base)?.allocation?;
        (addr - allocation.base < allocation.size).then_some(allocation)
    }

    /// The live allocation holding `addr`, with what `still_live` checks.
    pub fn identify(&self, addr: usize) -> Option<Identity> {
        let maps = self.map.read().ignore_poison();
        let allocation = Self::find_in(&maps, addr)?;
        let serial = maps.by_base.get(&allocation.base)?.serial;
        let bucket = removal_bucket(allocation.base);
        Some(Identity { allocation, serial, bucket, stamp: self.removals[bucket].load(Ordering::Acquire) })
    }

    /// Whether the allocation `identity` names is still live: at once (one
    /// load) while nothing of its bucket was freed since `identity` was
    /// taken, else by its serial, refreshing `identity` so that the next
    /// check is one load again.
    pub fn still_live(&self, identity: &mut Identity) -> bool {
        if self.removals[identity.bucket].load(Ordering::Acquire) == identity.stamp {
            return true;
        }
        match self.identify(identity.allocation.base) {
            Some(now) if now.serial == identity.serial => {
                *identity = now;
                true
            }
            _ => false,
        }
    }

    /// `find`, and what the answer holds while (`Recent::bucket`, `stamp`),
    /// read under the same lock as the answer: a change that comes after
    /// it moves the counter read here.
    fn find_with_validity(&self, addr: usize) -> (Option<Allocation>, (usize, u64)) {
        let maps = self.map.read().ignore_poison();
        let found = Self::find_in(&maps, addr);
        let bucket = found.map_or(OUTSIDE, |a| removal_bucket(a.base));
        let counter = if bucket == OUTSIDE { &self.inserts } else { &self.removals[bucket] };
        (found, (bucket, counter.load(Ordering::Acquire)))
    }
}

/// Every live allocation of the process.
pub(crate) static REGISTRY: Registry = Registry::new();

#[cfg(test)]
mod tests;
