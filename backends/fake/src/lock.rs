//! Locks that outlive a caught panic. Every table entry and every piece of
//! stream work runs inside a panic boundary, so a panic while a lock is
//! held becomes one failed operation and the backend goes on; a poisoned
//! lock would turn that into a failure of everything after it. The fake's
//! locks guard data whose updates are single steps (a slot written, a map
//! entry inserted or removed), so the next thread takes the lock as the
//! panic left it.
use std::sync::{LockResult, PoisonError};

/// `lock()`, `get_mut()` or a condition variable's `wait()`, with a
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
