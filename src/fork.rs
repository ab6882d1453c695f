//! A process made by `fork()` after the backend started. Only the forking
//! thread exists in the child, so a backend whose runtime runs threads of
//! its own (OpenCL's, CUDA's, a plugin's) would wait forever there for work
//! that nobody runs. As CUDA refuses a forked child, every call of such a
//! child that reaches the backend gets `XDAL_ERROR_BACKEND_UNAVAILABLE`,
//! saying why; the fake backend, whose streams are run by whichever thread
//! waits for them when its workers are gone, goes on working.
use crate::backend::Backend;
use crate::error::{err, Error};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Once;

static IN_CHILD: AtomicBool = AtomicBool::new(false);
static WATCH: Once = Once::new();

/// `pthread_atfork`'s child handler: one atomic store, which is all a
/// forked child of a threaded process may safely do here.
extern "C" fn after_fork_in_child() {
    IN_CHILD.store(true, Relaxed);
}

/// Called once a backend that does not survive `fork()` has started.
pub(crate) fn watch() {
    WATCH.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic; the
        // function lives as long as the process (this library is never
        // unloaded while it may fork).
        let registered = unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
        if registered != 0 {
            eprintln!("xdal: pthread_atfork failed ({registered}): a fork() child may wait on the backend forever");
        }
    });
}

/// Whether this process is a fork child of one whose backend had started.
#[inline(always)]
pub(crate) fn in_child() -> bool {
    IN_CHILD.load(Relaxed)
}

/// The refusal of every call a forked child makes to `backend`.
#[cold]
#[inline(never)]
pub(crate) fn refusal(backend: &Backend) -> Error {
    err!(
        XDAL_ERROR_BACKEND_UNAVAILABLE,
        "the {} backend started before this process was forked: a fork() child cannot use it (its runtime's threads \
         are not in the child); use xdal in the parent, or in a new process (spawn, or fork then exec)",
        backend.name.to_string_lossy()
    )
}
