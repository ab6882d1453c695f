//! Allocator statistics the front keeps itself, for backends without
//! `mem_get_stats`: what it sees pass through xdal_malloc/xdal_free and
//! their async and OOM outcomes.
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use xdal_abi::xdal_mem_stats_t;

#[derive(Default)]
struct DeviceCounts {
    allocated: AtomicU64,
    peak: AtomicU64,
    allocs: AtomicU64,
    frees: AtomicU64,
    ooms: AtomicU64,
}

const MAX_DEVICES: usize = 256;

fn counts(device: c_int) -> Option<&'static DeviceCounts> {
    static COUNTS: OnceLock<Vec<DeviceCounts>> = OnceLock::new();
    let all = COUNTS.get_or_init(|| (0..MAX_DEVICES).map(|_| DeviceCounts::default()).collect());
    all.get(usize::try_from(device).ok()?)
}

pub(crate) fn allocated(device: c_int, bytes: usize) {
    if let Some(c) = counts(device) {
        let now = c.allocated.fetch_add(bytes as u64, Relaxed) + bytes as u64;
        c.peak.fetch_max(now, Relaxed);
        c.allocs.fetch_add(1, Relaxed);
    }
}

pub(crate) fn freed(device: c_int, bytes: usize) {
    if let Some(c) = counts(device) {
        c.allocated.fetch_sub(bytes as u64, Relaxed);
        c.frees.fetch_add(1, Relaxed);
    }
}

pub(crate) fn out_of_memory(device: c_int) {
    if let Some(c) = counts(device) {
        c.ooms.fetch_add(1, Relaxed);
    }
}

/// The front's view of `device`: with no pool, reserved equals allocated.
pub(crate) fn snapshot(device: c_int) -> xdal_mem_stats_t {
    let Some(c) = counts(device) else { return xdal_mem_stats_t::default() };
    let allocated = c.allocated.load(Relaxed);
    xdal_mem_stats_t {
        struct_size: std::mem::size_of::<xdal_mem_stats_t>(),
        allocated_bytes: allocated,
        reserved_bytes: allocated,
        peak_allocated_bytes: c.peak.load(Relaxed),
        num_allocs: c.allocs.load(Relaxed),
        num_frees: c.frees.load(Relaxed),
        num_ooms: c.ooms.load(Relaxed),
    }
}

pub(crate) fn reset_peak(device: c_int) {
    if let Some(c) = counts(device) {
        c.peak.store(c.allocated.load(Relaxed), Relaxed);
    }
}
