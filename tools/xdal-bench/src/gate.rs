//! Gated streams: a host function at the head of a stream holds back the
//! work enqueued behind it while the enqueue calls are timed, so that the
//! figure is the cost of the calls on the calling thread alone, not of a
//! worker draining the same queue beside them (whose cache-line traffic
//! changes with the pace of the calls, and would swamp a difference of
//! nanoseconds).
use crate::api::{check, Res};
use crate::stats::timed;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use xdal::abi::*;
use xdal::*;

/// Calls held back by one gate: the queue stays this short, as in a
/// program that keeps a stream busy, instead of growing by hundreds of
/// megabytes over a batch, whose page faults and fresh allocations would
/// then be most of every figure, on both sides alike, and its noise.
const CALLS_PER_GATE: u64 = 1024;

/// `n` calls of `call`, in runs of at most `CALLS_PER_GATE`: each run is
/// timed while a gate from `gate` holds the stream (a `Gate`, or whatever
/// holds it until dropped); then the gate opens and `drain` synchronizes
/// the stream, outside the timing.
pub fn gated_calls<Held>(
    n: u64,
    call: impl FnMut() -> Res<()>,
    gate: impl FnMut() -> Res<Held>,
    drain: impl FnMut() -> Res<()>,
) -> Res<Duration> {
    gated_calls_in_runs(n, CALLS_PER_GATE, call, gate, drain)
}

/// `gated_calls` with runs of at most `per_gate` calls: for a runtime
/// whose stream queue holds fewer than `CALLS_PER_GATE` commands (an
/// enqueue onto a full queue waits for room, which behind a closed gate
/// never comes).
pub fn gated_calls_in_runs<Held>(
    n: u64,
    per_gate: u64,
    mut call: impl FnMut() -> Res<()>,
    mut gate: impl FnMut() -> Res<Held>,
    mut drain: impl FnMut() -> Res<()>,
) -> Res<Duration> {
    let mut took = Duration::ZERO;
    let mut left = n;
    while left > 0 {
        let run = left.min(per_gate.max(1));
        let held = gate()?;
        took += timed(|| (0..run).try_for_each(|_| call()))?;
        drop(held);
        drain()?;
        left -= run;
    }
    Ok(took)
}

/// A host function at the head of a stream that runs until the gate is
/// dropped: work enqueued behind it waits, untouched. It sleeps (a spinning
/// gate would take a core from the thread being measured). One gate is up
/// at a time (batches run one after the other, each ending with its stream
/// synchronized), so they share one flag, which outlives every host
/// function waiting on it.
pub struct Gate;

static GATE_OPEN: Mutex<bool> = Mutex::new(true);
static GATE_OPENED: Condvar = Condvar::new();

fn set_gate(open: bool) {
    *GATE_OPEN.lock().unwrap_or_else(|e| e.into_inner()) = open;
    if open {
        GATE_OPENED.notify_all();
    }
}

impl Gate {
    /// Closes the gate, and has `enqueue` put the host function that
    /// waits for it on a stream.
    pub fn new(enqueue: impl FnOnce(unsafe extern "C" fn(*mut c_void)) -> Res<()>) -> Res<Gate> {
        set_gate(false);
        let gate = Gate;
        enqueue(wait_for_gate)?;
        Ok(gate)
    }

    /// A gate at the head of `stream`, enqueued through the C ABI.
    pub fn front(stream: xdal_stream_t) -> Res<Gate> {
        Gate::new(|wait| check(xdal_launch_host_func(stream, Some(wait), null_mut()), "xdal_launch_host_func"))
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        set_gate(true);
    }
}

/// Waits until the gate opens.
unsafe extern "C" fn wait_for_gate(_: *mut c_void) {
    let mut open = GATE_OPEN.lock().unwrap_or_else(|e| e.into_inner());
    while !*open {
        open = GATE_OPENED.wait(open).unwrap_or_else(|e| e.into_inner());
    }
}
