//! Which threads are running a caller's code on xdal's behalf: a host
//! function, a host kernel, a graph's host node. Such code must not wait
//! for stream work (its own stream cannot move on until it returns, and a
//! worker it occupies may be the one the awaited work needs), so the front
//! refuses waiting calls made from inside it instead of hanging. Kept here,
//! in the crate that the front and every built-in backend share, so that
//! both see one per-thread mark.
use std::cell::Cell;

thread_local! {
    /// How many callbacks this thread is inside (a host kernel may launch
    /// nothing that runs inline, but a helping thread may nest).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `callback` (the caller's code) with this thread marked as inside
/// one, the mark removed however it ends.
#[inline]
pub fn run_callback<R>(callback: impl FnOnce() -> R) -> R {
    struct Unmark;
    impl Drop for Unmark {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
    DEPTH.with(|d| d.set(d.get() + 1));
    let _unmark = Unmark;
    callback()
}

/// Whether this thread is running a caller's callback for xdal.
#[inline]
pub fn in_callback() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

#[cfg(test)]
mod tests {
    use super::{in_callback, run_callback};

    #[test]
    fn the_mark_lasts_exactly_as_long_as_the_callback() {
        assert!(!in_callback());
        run_callback(|| {
            assert!(in_callback());
            run_callback(|| assert!(in_callback()));
            assert!(in_callback());
        });
        assert!(!in_callback());
        let unwound = std::panic::catch_unwind(|| run_callback(|| panic!("a callback that panics")));
        assert!(unwound.is_err());
        assert!(!in_callback(), "a panic leaves the mark removed");
    }
}
