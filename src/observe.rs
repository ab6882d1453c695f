//! Whether anything watches the calls: `XDAL_VALIDATE` (validate.rs), a
//! tracer (trace/), or a stream capture (graph/capture.rs), which takes
//! work instead of the backend. One word of flags, so that a call nobody
//! watches pays one relaxed load for all three; the environment is read on
//! the first call.
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// `XDAL_VALIDATE` is on.
pub(crate) const VALIDATE: u8 = 1;
/// A tracer is live (or `XDAL_TRACE` names a file).
pub(crate) const TRACE: u8 = 2;
/// A stream capture is active somewhere.
pub(crate) const CAPTURE: u8 = 4;
/// The environment is not read yet: the first call takes the slow path.
const UNREAD: u8 = 0x80;

static FLAGS: AtomicU8 = AtomicU8::new(UNREAD);

/// Whether any call watcher may be on: the boundary's one load.
#[inline(always)]
pub(crate) fn any() -> bool {
    FLAGS.load(Relaxed) != 0
}

/// The flags, reading the environment on first use.
#[inline]
pub(crate) fn flags() -> u8 {
    let flags = FLAGS.load(Relaxed);
    if flags & UNREAD == 0 {
        return flags;
    }
    read_environment()
}

#[cold]
fn read_environment() -> u8 {
    let mut set = 0;
    if crate::validate::from_environment() {
        set |= VALIDATE;
    }
    if crate::trace::from_environment() {
        set |= TRACE;
    }
    FLAGS.fetch_or(set, Relaxed);
    FLAGS.fetch_and(!UNREAD, Relaxed) & !UNREAD
}

/// Turns `flag` on or off.
pub(crate) fn set(flag: u8, on: bool) {
    flags();
    if on {
        FLAGS.fetch_or(flag, Relaxed);
    } else {
        FLAGS.fetch_and(!flag, Relaxed);
    }
}
