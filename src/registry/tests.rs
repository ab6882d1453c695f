//! The registry's own tests: its cache, its tombstones, its answers.
use super::*;

#[test]
fn find_covers_interior_addresses_only() {
    let registry = Registry::new();
    let memory = MemoryType::Device(0);
    registry.insert(Allocation { base: 1000, size: 100, memory });
    registry.insert(Allocation { base: 1100, size: 10, memory: MemoryType::Host });
    assert!(registry.find(999).is_none());
    assert_eq!(registry.find(1000).unwrap().base, 1000);
    assert_eq!(registry.find(1099).unwrap().base, 1000);
    assert_eq!(registry.find(1100).unwrap().memory, MemoryType::Host);
    assert!(registry.find(1110).is_none());
    assert_eq!(registry.find(1050).unwrap().room_after(1050), 50);
    assert!(registry.remove_if(1050, |_| true).is_none(), "only bases can be removed");
    assert!(registry.remove_if(1000, |a| a.memory == MemoryType::Host).is_none(), "the predicate is honoured");
    assert!(matches!(registry.place(1050, |_| None), Place::Allocated(a) if a.base == 1000));
    assert!(matches!(registry.place(5000, |_| Some(1)), Place::Freed(1)));
    assert!(matches!(registry.place(5000, |_| None), Place::Freed(1)), "cached");
    assert!(registry.remove_if(1000, |_| true).is_some());
    assert!(matches!(registry.place(1050, |_| None), Place::Unregistered), "the cache is invalidated by a free");
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

#[test]
fn changes_void_only_the_cached_answers_they_change() {
    let registry = Registry::new();
    let cached = |addr| registry.cached_sides([addr], 1).map(|[side]| side);
    // Two allocations in different removal buckets.
    let first = 0x10_0000;
    let second = (1..).map(|i| first + i * 0x1000).find(|&b| removal_bucket(b) != removal_bucket(first)).unwrap();
    for base in [first, second] {
        registry.insert(Allocation { base, size: 256, memory: MemoryType::Device(0) });
        registry.place(base + 8, |_| None);
    }
    registry.place(0x9000_0000, |_| None);
    assert_eq!(cached(first + 8), Some(MemoryType::Device(0)));
    assert_eq!(cached(0x9000_0000), Some(MemoryType::Unregistered));
    // An insert may cover an address outside every allocation, never a
    // live allocation.
    registry.insert(Allocation { base: 0x20_0000, size: 256, memory: MemoryType::Device(0) });
    assert_eq!(cached(first + 8), Some(MemoryType::Device(0)), "an insert changes no live allocation's answer");
    assert_eq!(cached(0x9000_0000), None, "an insert voids answers outside every allocation");
    registry.place(0x9000_0000, |_| None);
    registry.insert(Allocation { base: 0x9000_0000, size: 16, memory: MemoryType::Host });
    assert!(matches!(registry.place(0x9000_0000, |_| None), Place::Allocated(a) if a.memory == MemoryType::Host));
    // A remove voids the answers about its allocation, not the others'
    // (the cache keeps the last four answers: both asked again).
    registry.place(first + 8, |_| None);
    registry.place(second + 8, |_| None);
    assert!(registry.remove_if(second, |_| true).is_some());
    assert_eq!(cached(second + 8), None, "the freed allocation's answer is void");
    assert_eq!(cached(first + 8), Some(MemoryType::Device(0)), "another bucket's answer holds");
    assert!(matches!(registry.place(second + 8, |_| Some(0)), Place::Freed(0)), "and the next look sees it freed");
    // Freed, then handed out again at the same base: seen as live again.
    registry.insert(Allocation { base: second, size: 256, memory: MemoryType::Device(1) });
    assert!(matches!(registry.place(second + 8, |_| None), Place::Allocated(a) if a.memory == MemoryType::Device(1)));
}

#[test]
fn cached_sides_answer_only_what_fits() {
    let registry = Registry::new();
    let cached_sides_one = |addr, bytes| registry.cached_sides([addr], bytes).map(|[side]| side);
    registry.insert(Allocation { base: 1000, size: 100, memory: MemoryType::Device(1) });
    registry.insert(Allocation { base: 2000, size: 100, memory: MemoryType::Host });
    assert_eq!(cached_sides_one(1010, 8), Some(MemoryType::Device(1)), "the allocating thread knows its allocation");
    std::thread::scope(|scope| {
        let elsewhere = scope.spawn(|| registry.cached_sides([1010], 8)).join().unwrap();
        assert!(elsewhere.is_none(), "another thread has asked nothing yet: no answer");
    });
    // Answers come from `place` and are reused for ranges that fit.
    registry.place(1010, |_| None);
    registry.place(2010, |_| None);
    registry.place(5000, |_| None);
    registry.place(7000, |_| Some(0));
    assert_eq!(cached_sides_one(1050, 50), Some(MemoryType::Device(1)));
    assert_eq!(cached_sides_one(1050, 51), None, "a device range that overruns takes the slow path");
    assert_eq!(cached_sides_one(2000, 100), Some(MemoryType::Host), "pinned host memory");
    assert_eq!(cached_sides_one(2050, 51), None, "a pinned range that overruns takes the slow path");
    assert_eq!(
        cached_sides_one(5000, 1 << 20),
        Some(MemoryType::Unregistered),
        "ordinary host memory is bounded by nothing but the address space"
    );
    assert_eq!(cached_sides_one(5000, usize::MAX - 5000), Some(MemoryType::Unregistered), "up to its last byte");
    assert_eq!(cached_sides_one(5000, usize::MAX - 4999), None, "a range that wraps takes the slow path");
    assert_eq!(cached_sides_one(7000, 1), None, "freed device memory is never answered from the cache");
    assert_eq!(cached_sides_one(7000, 0), None, "nor an empty range in it");
    assert_eq!(cached_sides_one(1050, 0), None, "empty ranges are never answered from the cache");
    assert_eq!(
        registry.cached_sides([1010, 5000], 8),
        Some([MemoryType::Device(1), MemoryType::Unregistered]),
        "both sides of a copy at once"
    );
    assert_eq!(registry.cached_sides([1010, 7000], 8), None, "no answer unless both sides have one");
    // A remove voids the answers about what it removed.
    registry.place(2010, |_| None);
    assert_eq!(cached_sides_one(2050, 8), Some(MemoryType::Host));
    assert!(registry.remove_if(2000, |_| true).is_some());
    assert_eq!(cached_sides_one(2050, 8), None);
}

#[test]
fn operands_stay_cached_while_results_come_and_go() {
    // A framework's loop: two operands asked about, then per operation
    // a result allocated, checked, and the previous result freed.
    let registry = Registry::new();
    let device = MemoryType::Device(0);
    registry.insert(Allocation { base: 0x10_0000, size: 4096, memory: device });
    registry.insert(Allocation { base: 0x20_0000, size: 4096, memory: device });
    // Results outside the operands' removal buckets: a free voids the
    // answers of its whole bucket, by design (a miss then only takes
    // the locked search); what is tested is which entry a new answer
    // replaces.
    let operand_buckets = [removal_bucket(0x10_0000), removal_bucket(0x20_0000)];
    let results = (0..).map(|i: usize| 0x100_0000 + i * 0x1_0000);
    let results = results.filter(|&base| !operand_buckets.contains(&removal_bucket(base)));
    let mut previous = None;
    for (i, result) in results.take(64).enumerate() {
        registry.insert(Allocation { base: result, size: 4096, memory: device });
        let sides = registry.cached_sides([0x10_0000, 0x20_0000, result], 4096);
        assert_eq!(sides, Some([device; 3]), "operation {i}: every check answered from the cache");
        if let Some(previous) = previous.replace(result) {
            assert!(registry.remove_if(previous, |_| true).is_some());
        }
    }
}

#[test]
fn a_launch_is_known_good_only_when_every_range_is_on_its_device() {
    let registry = Registry::new();
    registry.insert(Allocation { base: 0x1000, size: 0x100, memory: MemoryType::Device(0) });
    registry.insert(Allocation { base: 0x2000, size: 0x100, memory: MemoryType::Device(0) });
    registry.insert(Allocation { base: 0x3000, size: 0x100, memory: MemoryType::Device(1) });
    registry.insert(Allocation { base: 0x4000, size: 0x100, memory: MemoryType::Host });
    let known = |ranges: &[(usize, usize)], device| registry.cached_on_device(ranges.iter().copied(), device);
    assert!(known(&[(0x1000, 0x100), (0x2010, 0x10)], 0), "both inside allocations of device 0");
    assert!(known(&[(0x1000, 0x100), (0, 0), (0x5000, 0)], 0), "empty ranges touch nothing");
    assert!(known(&[], 0));
    assert!(!known(&[(0x1000, 0x101)], 0), "one byte past the end");
    assert!(!known(&[(0x1000, 8), (0x3000, 8)], 0), "memory of another device");
    assert!(known(&[(0x3000, 8)], 1));
    assert!(!known(&[(0x4000, 8)], 0), "pinned host memory");
    assert!(!known(&[(0x5000, 8)], 0), "memory xdal never gave");
    assert!(!known(&[(0, 8)], 0), "NULL");
    std::thread::scope(|scope| {
        let elsewhere = scope.spawn(|| registry.cached_on_device([(0x1000, 8)], 0)).join().unwrap();
        assert!(!elsewhere, "another thread's cache has no answer yet: it checks range by range");
    });
    assert!(registry.remove_if(0x2000, |_| true).is_some());
    assert!(!known(&[(0x1000, 8), (0x2000, 8)], 0), "freed since");
    assert!(known(&[(0x1000, 8)], 0), "the other allocation's answer holds");
}
