//! The one clock of xdal's timestamps: `CLOCK_MONOTONIC` in nanoseconds.
//! Tracing puts host and device times on it (`xdal_get_timestamp_ns`,
//! activity records, a backend's `time_next_enqueue`), and event stamps use
//! it too, so every time xdal reports compares with every other.

/// Now, in nanoseconds of `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid output.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_clock_moves_forward() {
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::monotonic_ns();
        assert!(b >= a + 2_000_000, "{a} then {b}");
    }
}
