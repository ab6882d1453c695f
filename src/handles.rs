//! Handle tables. A handle given to C is a token: a type tag, a slot index
//! and the slot's generation packed into one pointer-sized value. It is
//! never dereferenced; looking it up checks all three, so a destroyed,
//! foreign (another object type) or garbage handle is reported as
//! `XDAL_ERROR_INVALID_HANDLE` instead of becoming a use-after-free.
//!
//! Every call through the ABI looks up one or two handles, so a lookup
//! takes no lock and no reference count: it *pins* its slot (one atomic
//! add on the slot's own cache line, one subtract when the borrow ends)
//! and borrows the object in place. A destroy racing a call marks the
//! slot dead; the last pin to go drops the object and frees the slot, so
//! a call never sees its object vanish, and destroying never waits.
use crate::lock::IgnorePoison;
use std::cell::UnsafeCell;
use std::ops::Deref;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};

const INDEX_BITS: u32 = 24;
// Handles are 64-bit tokens (tag, generation, slot) carried in pointers.
const _: () = assert!(usize::BITS == 64, "xdal's handles need 64-bit pointers");
const GENERATION_BITS: u32 = 24;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GENERATION_MASK: u64 = (1 << GENERATION_BITS) - 1;
const TAG_SHIFT: u32 = INDEX_BITS + GENERATION_BITS;

/// Slots are allocated a segment at a time and never move or go away, so a
/// lookup needs no lock to reach one.
const SEGMENT_BITS: u32 = 10;
const SEGMENT_SLOTS: usize = 1 << SEGMENT_BITS;
const SEGMENTS: usize = 1 << (INDEX_BITS - SEGMENT_BITS);

/// A slot's state word: generation in the high half, then the HELD bit
/// (the slot holds a value: live, or dead and still pinned), the LIVE bit,
/// and the number of pins. A free slot is neither HELD nor LIVE, so a stale
/// pin on it never tries to reclaim what `insert` is putting there.
const GENERATION_SHIFT: u32 = 32;
const HELD: u64 = 1 << 31;
const LIVE: u64 = 1 << 30;
const PINS: u64 = LIVE - 1;

fn generation_of(state: u64) -> u64 {
    (state >> GENERATION_SHIFT) & GENERATION_MASK
}

/// One object's place. On a cache line of its own: threads calling with
/// different handles never contend.
#[repr(align(64))]
struct Slot<T> {
    state: AtomicU64,
    /// Some while LIVE, and while any pin taken when it was LIVE remains.
    value: UnsafeCell<Option<Arc<T>>>,
}

type Segment<T> = [Slot<T>; SEGMENT_SLOTS];

/// A segment of free slots, built on the heap: built in place and then
/// boxed, its 64 KiB would make every `insert` reserve (and probe, page by
/// page) that much stack, which doubled the cost of a stream create.
#[cold]
#[inline(never)]
fn new_segment<T>() -> Option<Box<Segment<T>>> {
    let slots: Box<[Slot<T>]> =
        (0..SEGMENT_SLOTS).map(|_| Slot { state: AtomicU64::new(0), value: UnsafeCell::new(None) }).collect();
    slots.try_into().ok()
}

/// Which slots are free; taken only to create and to reclaim.
struct Allocator {
    free: Vec<u32>,
    next: u32,
}

/// Live objects of one type, addressed by handle.
pub(crate) struct HandleTable<T> {
    /// Top 16 bits of every handle of this table; never 0, so no handle is
    /// NULL and no user-space pointer looks like one.
    tag: u16,
    /// What `XDAL_VALIDATE` calls its objects; None: not reported (objects
    /// a caller need not destroy).
    kind: Option<&'static str>,
    segments: [AtomicPtr<Segment<T>>; SEGMENTS],
    allocator: Mutex<Allocator>,
}

// SAFETY: the slots' values are only reached through the pin protocol
// below (written by `insert` before the LIVE bit is published, taken by
// the one thread that reclaims a dead, unpinned slot); `T` itself is
// shared as `Arc<T>`, hence the bounds.
unsafe impl<T: Send + Sync> Sync for HandleTable<T> {}

/// A borrowed live object: its slot stays pinned until this drops.
pub(crate) struct Ref<T: 'static> {
    table: &'static HandleTable<T>,
    slot: &'static Slot<T>,
    index: u32,
}

impl<T> Deref for Ref<T> {
    type Target = Arc<T>;
    fn deref(&self) -> &Arc<T> {
        // SAFETY: the pin was taken while the slot was LIVE, and a slot's
        // value is neither replaced nor taken while it is pinned.
        unsafe { (*self.slot.value.get()).as_ref() }.expect("a pinned live slot holds its value")
    }
}

impl<T> Drop for Ref<T> {
    fn drop(&mut self) {
        self.table.unpin(self.slot, self.index);
    }
}

impl<T> HandleTable<T> {
    pub const fn new(tag: u16) -> HandleTable<T> {
        HandleTable {
            tag,
            kind: None,
            segments: [const { AtomicPtr::new(std::ptr::null_mut()) }; SEGMENTS],
            allocator: Mutex::new(Allocator { free: Vec::new(), next: 0 }),
        }
    }

    /// A table of objects the caller must destroy: `XDAL_VALIDATE` reports
    /// those still live at exit as `kind`s.
    pub const fn tracked(tag: u16, kind: &'static str) -> HandleTable<T> {
        let mut table = Self::new(tag);
        table.kind = Some(kind);
        table
    }

    fn allocator(&self) -> std::sync::MutexGuard<'_, Allocator> {
        self.allocator.lock().ignore_poison()
    }

    fn slot(&self, index: u32) -> Option<&Slot<T>> {
        let segment = self.segments[index as usize >> SEGMENT_BITS].load(Acquire);
        // SAFETY: a published segment is never freed or moved (the tables
        // are statics; a segment lives as long as its table).
        let segment = unsafe { segment.as_ref() }?;
        Some(&segment[index as usize & (SEGMENT_SLOTS - 1)])
    }

    /// Stores `value`; returns its handle, or None if the table is full.
    pub fn insert(&self, value: Arc<T>) -> Option<usize> {
        let mut allocator = self.allocator();
        let index = match allocator.free.pop() {
            Some(index) => index,
            None => {
                let index = allocator.next;
                if u64::from(index) > INDEX_MASK {
                    return None;
                }
                let cell = &self.segments[index as usize >> SEGMENT_BITS];
                if cell.load(Acquire).is_null() {
                    cell.store(Box::into_raw(new_segment()?), Release);
                }
                allocator.next += 1;
                index
            }
        };
        let slot = self.slot(index).expect("the allocator's slots have segments");
        // SAFETY: a free slot is not LIVE and holds no pin taken while LIVE:
        // nobody reads its value (stale pins see the wrong state and leave).
        unsafe { *slot.value.get() = Some(value) };
        let state = slot.state.fetch_or(HELD | LIVE, Release);
        let handle = self.encode(index, generation_of(state));
        if let Some(kind) = self.kind {
            crate::validate::created(kind, handle, String::new);
        }
        Some(handle)
    }

    /// Pins the slot of `handle` if it holds the live object the handle names.
    fn pin(&self, handle: usize) -> Option<(&Slot<T>, u32)> {
        let (index, generation) = self.decode(handle)?;
        let slot = self.slot(index)?;
        let state = slot.state.fetch_add(1, Acquire);
        if state & LIVE != 0 && generation_of(state) == generation {
            return Some((slot, index));
        }
        self.unpin(slot, index);
        None
    }

    /// Drops a pin; the last pin of a dead slot reclaims it.
    #[inline]
    fn unpin(&self, slot: &Slot<T>, index: u32) {
        let state = slot.state.fetch_sub(1, AcqRel) - 1;
        if state & (HELD | LIVE | PINS) == HELD {
            self.reclaim(slot, index, state);
        }
    }

    /// Frees a dead slot with no pins left, once: whoever moves it to the
    /// next generation (and out of HELD) owns its value.
    #[cold]
    #[inline(never)]
    fn reclaim(&self, slot: &Slot<T>, index: u32, state: u64) {
        let next = ((generation_of(state) + 1) & GENERATION_MASK) << GENERATION_SHIFT;
        // SAFETY (of the reads below): only the CAS winner goes on, and no
        // pin can reach the value of a dead slot any more.
        let Some(value) = slot.state.compare_exchange(state, next, AcqRel, Relaxed).ok().and_then(|_| {
            // SAFETY: see above: this thread alone owns the dead slot's value.
            unsafe { (*slot.value.get()).take() }
        }) else {
            return;
        };
        // A slot whose generations are used up is never handed out again:
        // its next object would get the handle of its first, and a handle
        // kept from then would name it. (Reuse is last-in first-out, so a
        // program that creates and destroys one object in a loop meets this
        // after 2^24 rounds; a retired slot costs 64 bytes.)
        if generation_of(next) != 0 {
            self.allocator().free.push(index);
        }
        // Dropped last, outside the lock: it may call into the backend.
        drop(value);
    }

    /// The object behind `handle`, if it is live and of this table.
    #[inline]
    pub fn get(&'static self, handle: usize) -> Option<Ref<T>> {
        let (slot, index) = self.pin(handle)?;
        // SAFETY: slots live as long as their (static) table.
        let slot: &'static Slot<T> = unsafe { &*(slot as *const Slot<T>) };
        Some(Ref { table: self, slot, index })
    }

    /// Removes the object behind `handle`; the handle is invalid from now
    /// on. Calls already using the object finish with it.
    pub fn remove(&self, handle: usize) -> Option<Arc<T>> {
        let (slot, index) = self.pin(handle)?;
        // SAFETY: pinned while LIVE.
        let value = unsafe { (*slot.value.get()).clone() };
        let killed = slot.state.fetch_and(!LIVE, AcqRel) & LIVE != 0;
        self.unpin(slot, index);
        if let (Some(kind), true) = (self.kind, killed) {
            crate::validate::destroyed(kind, handle);
        }
        // Two destroys of one handle: only the one that killed it succeeds.
        value.filter(|_| killed)
    }

    /// Every live object.
    pub fn values(&self) -> Vec<Arc<T>> {
        let next = self.allocator().next;
        (0..next)
            .filter_map(|index| {
                let slot = self.slot(index)?;
                let state = slot.state.load(Acquire);
                let (slot, index) = self.pin(self.encode(index, generation_of(state)))?;
                // SAFETY: pinned while LIVE.
                let value = unsafe { (*slot.value.get()).clone() };
                self.unpin(slot, index);
                value
            })
            .collect()
    }

    fn encode(&self, index: u32, generation: u64) -> usize {
        // A handle is 64 bits wide: see the assertion on usize below.
        #[allow(clippy::cast_possible_truncation)]
        let handle = ((u64::from(self.tag) << TAG_SHIFT) | (generation << INDEX_BITS) | u64::from(index)) as usize;
        handle
    }

    fn decode(&self, handle: usize) -> Option<(u32, u64)> {
        let handle = handle as u64;
        if handle >> TAG_SHIFT != u64::from(self.tag) {
            return None;
        }
        Some(((handle & INDEX_MASK) as u32, (handle >> INDEX_BITS) & GENERATION_MASK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn destroyed_foreign_and_garbage_handles_are_refused() {
        static STREAMS: HandleTable<i32> = HandleTable::new(0xA151);
        static EVENTS: HandleTable<i32> = HandleTable::new(0xA1E7);
        let s = STREAMS.insert(Arc::new(1)).unwrap();
        let e = EVENTS.insert(Arc::new(2)).unwrap();
        assert_eq!(STREAMS.get(s).as_deref().map(|v| **v), Some(1));
        assert!(STREAMS.get(e).is_none(), "an event handle is not a stream");
        assert!(STREAMS.get(0).is_none());
        assert!(STREAMS.get(0x12345).is_none());
        assert!(STREAMS.get(usize::MAX).is_none());
        assert!(STREAMS.get(s + (5 << SEGMENT_BITS)).is_none(), "a slot never allocated");
        assert_eq!(STREAMS.remove(s).as_deref(), Some(&1));
        assert!(STREAMS.get(s).is_none(), "destroyed");
        assert!(STREAMS.remove(s).is_none(), "destroyed twice");
        // The slot is reused with a new generation: the old handle stays dead.
        let s2 = STREAMS.insert(Arc::new(3)).unwrap();
        assert_ne!(s, s2);
        assert!(STREAMS.get(s).is_none());
        assert_eq!(STREAMS.get(s2).as_deref().map(|v| **v), Some(3));
        assert_eq!(STREAMS.values().iter().map(|v| **v).collect::<Vec<_>>(), [3]);
    }

    const ALIVE: u64 = 0x5AFE_0B1E_C7AA_11FE;

    /// Counts drops, to see when the table lets an object go; its canary is
    /// wiped on drop, so a lookup that reached a dropped object sees it.
    struct Tracked(Arc<AtomicUsize>, AtomicU64);
    impl Tracked {
        fn new(drops: &Arc<AtomicUsize>) -> Arc<Tracked> {
            Arc::new(Tracked(drops.clone(), AtomicU64::new(ALIVE)))
        }
    }
    impl Drop for Tracked {
        fn drop(&mut self) {
            assert_eq!(self.1.swap(0, SeqCst), ALIVE, "dropped twice");
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn an_object_outlives_its_destroy_while_a_call_borrows_it() {
        static TABLE: HandleTable<Tracked> = HandleTable::new(0xA1F1);
        let drops = Arc::new(AtomicUsize::new(0));
        let handle = TABLE.insert(Tracked::new(&drops)).unwrap();
        let borrowed = TABLE.get(handle).unwrap();
        drop(TABLE.remove(handle).expect("destroy succeeds while borrowed"));
        assert!(TABLE.get(handle).is_none(), "no new borrow of a destroyed handle");
        assert_eq!(drops.load(SeqCst), 0, "still borrowed");
        let reused = TABLE.insert(Tracked::new(&drops)).unwrap();
        let slot_mask = usize::try_from(INDEX_MASK).unwrap();
        assert_ne!(reused & slot_mask, handle & slot_mask, "a pinned slot is not reused");
        drop(borrowed);
        assert_eq!(drops.load(SeqCst), 1, "the last borrow drops it");
        let again = TABLE.insert(Tracked::new(&drops)).unwrap();
        assert_eq!(again & slot_mask, handle & slot_mask, "the freed slot is reused");
        assert!(TABLE.get(handle).is_none(), "with a new generation");
        assert!(TABLE.remove(reused).is_some() && TABLE.remove(again).is_some());
        assert_eq!(drops.load(SeqCst), 3);
    }

    #[test]
    fn a_slot_is_retired_before_its_generation_wraps() {
        static TABLE: HandleTable<Tracked> = HandleTable::new(0xA1F3);
        let drops = Arc::new(AtomicUsize::new(0));
        let first = TABLE.insert(Tracked::new(&drops)).unwrap();
        let slot_mask = usize::try_from(INDEX_MASK).unwrap();
        let index = u32::try_from(first & slot_mask).unwrap();
        assert!(TABLE.remove(first).is_some());
        // Skip to the last generation (as 2^24 - 1 rounds would).
        let slot = TABLE.slot(index).unwrap();
        slot.state.store(GENERATION_MASK << GENERATION_SHIFT, SeqCst);
        let last = TABLE.insert(Tracked::new(&drops)).unwrap();
        assert_eq!(last & slot_mask, first & slot_mask, "the slot is reused up to its last generation");
        assert!(TABLE.remove(last).is_some());
        let after = TABLE.insert(Tracked::new(&drops)).unwrap();
        assert_ne!(after & slot_mask, first & slot_mask, "then retired");
        assert!(TABLE.get(first).is_none(), "the first handle names nothing");
        assert!(TABLE.remove(after).is_some());
        assert_eq!(drops.load(SeqCst), 3);
    }

    #[test]
    fn lookups_racing_destroys_never_see_a_dropped_object() {
        static TABLE: HandleTable<Tracked> = HandleTable::new(0xA1F2);
        let drops = Arc::new(AtomicUsize::new(0));
        let live = Arc::new(AtomicUsize::new(0));
        let handles: Vec<AtomicUsize> = (0..8).map(|_| AtomicUsize::new(0)).collect();
        for h in &handles {
            h.store(TABLE.insert(Tracked::new(&drops)).unwrap(), SeqCst);
        }
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    for i in 0..200_000 {
                        if let Some(object) = TABLE.get(handles[i % 8].load(SeqCst)) {
                            std::hint::spin_loop();
                            assert_eq!(object.1.load(SeqCst), ALIVE, "a lookup reached a dropped object");
                            live.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
            scope.spawn(|| {
                for i in 0..20_000 {
                    let h = &handles[i % 8];
                    let old = h.load(SeqCst);
                    assert!(TABLE.remove(old).is_some());
                    h.store(TABLE.insert(Tracked::new(&drops)).unwrap(), SeqCst);
                }
            });
        });
        assert!(live.load(SeqCst) > 0);
        assert_eq!(drops.load(SeqCst), 20_000, "every destroyed object dropped exactly once");
        assert_eq!(TABLE.values().len(), 8);
    }
}
