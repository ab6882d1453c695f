//! Allocator statistics the front keeps itself: for backends without
//! `mem_get_stats`, what it sees pass through xdal_malloc/xdal_free and
//! their async and OOM outcomes; for backends built against 1.0, whose
//! statistics end before `peak_reserved_bytes`, the reservations it has
//! reported.
use crate::lock::IgnorePoison;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use xdal_abi::xdal_mem_stats_t;

/// The counts of one device, changed and read together under one lock,
/// so that every read is a snapshot that satisfies the invariants
/// semantics.md states (a peak is never below its current value).
#[derive(Default)]
struct Counts {
    allocated: u64,
    peak: u64,
    allocs: u64,
    frees: u64,
    ooms: u64,
}

#[derive(Default)]
struct DeviceCounts {
    counts: Mutex<Counts>,
    /// The highest `reserved_bytes` a backend without `peak_reserved_bytes`
    /// reported for the device since the last reset.
    reserved_seen: AtomicU64,
}

const MAX_DEVICES: usize = xdal_abi::XDAL_MAX_DEVICES as usize;

/// What the front puts in `peak_reserved_bytes` before asking the backend:
/// still there afterwards, the backend does not know the field.
pub(crate) const UNWRITTEN: u64 = u64::MAX;

fn counts(device: c_int) -> Option<&'static DeviceCounts> {
    static COUNTS: OnceLock<Vec<DeviceCounts>> = OnceLock::new();
    let all = COUNTS.get_or_init(|| (0..MAX_DEVICES).map(|_| DeviceCounts::default()).collect());
    all.get(usize::try_from(device).ok()?)
}

/// Changes the counts of `device` under its lock.
fn update(device: c_int, change: impl FnOnce(&mut Counts)) {
    if let Some(c) = counts(device) {
        change(&mut c.counts.lock().ignore_poison());
    }
}

pub(crate) fn allocated(device: c_int, bytes: usize) {
    update(device, |c| {
        c.allocated += bytes as u64;
        c.peak = c.peak.max(c.allocated);
        c.allocs += 1;
    });
}

pub(crate) fn freed(device: c_int, bytes: usize) {
    update(device, |c| {
        c.allocated -= bytes as u64;
        c.frees += 1;
    });
}

pub(crate) fn out_of_memory(device: c_int) {
    update(device, |c| c.ooms += 1);
}

/// The front's view of `device`: with no pool, reserved equals allocated,
/// and so do their peaks.
pub(crate) fn snapshot(device: c_int) -> xdal_mem_stats_t {
    let Some(c) = counts(device) else { return xdal_mem_stats_t::default() };
    let c = c.counts.lock().ignore_poison();
    xdal_mem_stats_t {
        struct_size: std::mem::size_of::<xdal_mem_stats_t>(),
        allocated_bytes: c.allocated,
        reserved_bytes: c.allocated,
        peak_allocated_bytes: c.peak,
        num_allocs: c.allocs,
        num_frees: c.frees,
        num_ooms: c.ooms,
        peak_reserved_bytes: c.peak,
    }
}

/// Resets the front's allocation peak, for backends without statistics.
pub(crate) fn reset_peak(device: c_int) {
    update(device, |c| c.peak = c.allocated);
}

/// Fills `peak_reserved_bytes` of statistics from a backend that left it
/// unwritten (one built against 1.0). The true peak is not known, so this
/// is a lower bound of it: the highest of the current `reserved_bytes`,
/// `peak_allocated_bytes` (reserved bytes hold every allocated byte) and
/// every `reserved_bytes` reported for the device since the last reset.
pub(crate) fn complete_peak_reserved(device: c_int, stats: &mut xdal_mem_stats_t) {
    let seen = counts(device).map_or(0, |c| c.reserved_seen.fetch_max(stats.reserved_bytes, Relaxed));
    stats.peak_reserved_bytes = seen.max(stats.reserved_bytes).max(stats.peak_allocated_bytes);
}

/// Forgets the reservations reported since the last reset: after a reset
/// the lower bound starts again from the current reservation.
pub(crate) fn reset_reserved_seen(device: c_int) {
    if let Some(c) = counts(device) {
        c.reserved_seen.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device index no other test of this binary touches.
    // The last device indices: no other test of the front uses them.
    const DEVICE: c_int = xdal_abi::XDAL_MAX_DEVICES - 2;

    fn backend_stats(reserved: u64, peak_allocated: u64) -> xdal_mem_stats_t {
        xdal_mem_stats_t {
            reserved_bytes: reserved,
            peak_allocated_bytes: peak_allocated,
            peak_reserved_bytes: UNWRITTEN,
            ..Default::default()
        }
    }

    #[test]
    fn the_lower_bound_for_a_1_0_backend_keeps_what_it_saw_until_a_reset() {
        let mut s = backend_stats(4096, 1000);
        complete_peak_reserved(DEVICE, &mut s);
        assert_eq!(s.peak_reserved_bytes, 4096, "at least the current reservation");

        let mut s = backend_stats(512, 1000);
        complete_peak_reserved(DEVICE, &mut s);
        assert_eq!(s.peak_reserved_bytes, 4096, "a reservation reported earlier stays the peak");

        reset_reserved_seen(DEVICE);
        let mut s = backend_stats(512, 300);
        complete_peak_reserved(DEVICE, &mut s);
        assert_eq!(s.peak_reserved_bytes, 512, "after a reset: the current reservation");

        let mut s = backend_stats(0, 2048);
        complete_peak_reserved(DEVICE, &mut s);
        assert_eq!(s.peak_reserved_bytes, 2048, "allocated bytes were reserved: the allocation peak bounds it");
        reset_reserved_seen(DEVICE);
    }

    #[test]
    fn without_backend_statistics_the_reservation_peak_is_the_allocation_peak() {
        const OWN: c_int = xdal_abi::XDAL_MAX_DEVICES - 1;
        allocated(OWN, 3000);
        allocated(OWN, 1000);
        freed(OWN, 3000);
        let s = snapshot(OWN);
        assert_eq!((s.reserved_bytes, s.peak_reserved_bytes), (1000, 4000));
        reset_peak(OWN);
        assert_eq!(snapshot(OWN).peak_reserved_bytes, 1000);
        freed(OWN, 1000);
    }
}
