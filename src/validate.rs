//! `XDAL_VALIDATE=1`: the front remembers which call made each object a
//! caller must destroy (allocations, pinned host memory, streams, events,
//! modules, and the graphs and tracers of 1.2), and at exit reports to
//! stderr every one not destroyed, with its size and the call that made it,
//! as a leak checker does. Off, it costs each call one relaxed load.
use crate::lock::IgnorePoison;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Whether validation is on (`XDAL_VALIDATE`, read on the first call).
#[inline]
pub(crate) fn enabled() -> bool {
    crate::observe::flags() & crate::observe::VALIDATE != 0
}

/// Reads `XDAL_VALIDATE` (once, for observe.rs); when on, arranges the
/// report at exit.
pub(crate) fn from_environment() -> bool {
    let on = xdal_backend_support::env::var("XDAL_VALIDATE").is_some_and(|v| v != "0");
    if on {
        // SAFETY: registering a plain extern "C" function with no
        // arguments; it runs once, at exit.
        unsafe { libc::atexit(report_at_exit) };
    }
    on
}

thread_local! {
    /// The xdal function this thread is in, while validation is on.
    static CURRENT_CALL: Cell<&'static str> = const { Cell::new("") };
}

/// Notes the function a thread has entered (the observed boundary calls
/// it while validation is on).
pub(crate) fn entering(function: &'static str) {
    CURRENT_CALL.set(function);
}

/// Where an object came from.
struct Origin {
    what: String,
    call: &'static str,
    serial: u64,
    thread: String,
}

static SERIAL: AtomicU64 = AtomicU64::new(1);
static LIVE: Mutex<Option<HashMap<(&'static str, usize), Origin>>> = Mutex::new(None);

/// Records a new object: `kind` and `key` (its handle or address) name
/// it, `what` describes it ("1024 bytes on device 0").
pub(crate) fn created(kind: &'static str, key: usize, what: impl FnOnce() -> String) {
    if !enabled() {
        return;
    }
    let tid = crate::trace::thread_id();
    let thread = std::thread::current();
    let origin = Origin {
        what: what(),
        call: CURRENT_CALL.get(),
        serial: SERIAL.fetch_add(1, Relaxed),
        thread: match thread.name() {
            Some(name) => format!("{tid} ({name})"),
            None => tid.to_string(),
        },
    };
    LIVE.lock().ignore_poison().get_or_insert_with(HashMap::new).insert((kind, key), origin);
}

/// Forgets an object that was destroyed.
pub(crate) fn destroyed(kind: &'static str, key: usize) {
    if !enabled() {
        return;
    }
    if let Some(live) = LIVE.lock().ignore_poison().as_mut() {
        live.remove(&(kind, key));
    }
}

/// The report of what is still live, oldest first ("" when nothing is).
fn report() -> String {
    let live = LIVE.lock().ignore_poison();
    let Some(live) = live.as_ref().filter(|l| !l.is_empty()) else { return String::new() };
    let mut objects: Vec<_> = live.iter().collect();
    objects.sort_by_key(|(_, origin)| origin.serial);
    let mut text = format!("xdal: XDAL_VALIDATE: {} object(s) never destroyed:\n", objects.len());
    for ((kind, key), origin) in objects {
        let _ = writeln!(
            text,
            "  {kind} {key:#x}{}{}: made by {} (object #{} of the process, on thread {})",
            if origin.what.is_empty() { "" } else { ", " },
            origin.what,
            if origin.call.is_empty() { "an xdal call" } else { origin.call },
            origin.serial,
            origin.thread
        );
    }
    text
}

extern "C" fn report_at_exit() {
    // Nothing may unwind out of an atexit handler.
    let _ = std::panic::catch_unwind(|| {
        let text = report();
        if !text.is_empty() {
            eprint!("{text}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_lists_what_is_live_oldest_first_with_its_call() {
        // Forced on for this test binary's process (no report at exit: the
        // environment did not ask for one).
        crate::observe::set(crate::observe::VALIDATE, true);
        entering("xdal_stream_create");
        created("test-stream", 0xA1, String::new);
        entering("xdal_malloc");
        created("test-allocation", 0x1000, || "64 bytes on device 0".into());
        created("test-allocation", 0x2000, || "32 bytes on device 1".into());
        destroyed("test-allocation", 0x2000);
        let text = report();
        let stream = text.find("test-stream 0xa1: made by xdal_stream_create").expect(&text);
        let allocation = text.find("test-allocation 0x1000, 64 bytes on device 0: made by xdal_malloc").expect(&text);
        assert!(stream < allocation, "oldest first: {text}");
        assert!(!text.contains("0x2000"), "destroyed objects are not reported: {text}");
        destroyed("test-stream", 0xA1);
        destroyed("test-allocation", 0x1000);
    }
}
