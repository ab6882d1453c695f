//! Locks that outlive a caught panic. Every export runs inside the panic
//! boundary, so a panic while a lock is held becomes one call's
//! `XDAL_ERROR_INTERNAL` and the process goes on. A poisoned lock would turn
//! that into a failure of every later call; the front's locks guard data
//! whose updates are single steps (an insert, a remove, a slot write), so
//! what a panic leaves is a step done or not done, and the next caller takes
//! the lock as it is.
use std::sync::{LockResult, PoisonError};

/// `lock()`, `read()`, `write()` or a condition variable's `wait()`, with a
/// poisoned result taken as it is.
pub(crate) trait IgnorePoison<Guard> {
    fn ignore_poison(self) -> Guard;
}

impl<Guard> IgnorePoison<Guard> for LockResult<Guard> {
    #[inline]
    fn ignore_poison(self) -> Guard {
        self.unwrap_or_else(PoisonError::into_inner)
    }
}
