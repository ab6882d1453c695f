//! Stream capture, generic over every backend: while a stream captures,
//! the front records the work enqueued on it as graph nodes instead of
//! handing it to the backend, follows fork and join through events, and
//! refuses (invalidating the capture) the calls a capture cannot contain.
use super::node::{Node, Op};
use crate::backend::{call, Backend, DeviceIndex};
use crate::error::{bail, err, Error, XResult};
use crate::lock::IgnorePoison;
use crate::objects::{EventObj, StreamObj};
use crate::registry::{Allocation, MemoryType, REGISTRY};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;
use xdal_abi::*;

/// One capture: begun on an origin stream, joined by the streams that
/// waited on its events.
pub(crate) struct Capture {
    pub id: u64,
    pub mode: xdal_capture_mode,
    thread: ThreadId,
    pub device: DeviceIndex,
    /// The origin stream (its address: identity only).
    origin: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Why the capture is broken, once it is.
    invalid: Option<String>,
    /// Whether `end_capture` ran.
    ended: bool,
    nodes: Vec<Node>,
    /// Each participating stream's frontier: the nodes the next work on it
    /// waits for.
    tails: HashMap<usize, Vec<usize>>,
    /// Every participating stream, the origin first.
    streams: Vec<Arc<StreamObj>>,
    /// Memory `xdal_malloc_async` reserved for the graph: (address, bytes).
    memory: Vec<(usize, usize)>,
}

/// What a finished capture hands to its graph.
pub(crate) struct Captured {
    pub nodes: Vec<Node>,
    pub memory: Vec<(usize, usize)>,
    pub device: DeviceIndex,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Captures begun and not ended, for the checks of calls that do not name
/// a stream (`xdal_malloc`, synchronous copies, device synchronize). While
/// it is empty, observe.rs's CAPTURE flag is off, which spares every call
/// the lock.
static ACTIVE: Mutex<Vec<Weak<Capture>>> = Mutex::new(Vec::new());

/// Whether any capture is active in the process: one load while nothing
/// watches calls.
#[inline(always)]
fn any_active() -> bool {
    crate::observe::any() && crate::observe::flags() & crate::observe::CAPTURE != 0
}

/// `XDAL_ERROR_CAPTURE_INVALIDATED` if the capture is broken.
fn ensure_valid(capture: &Capture, state: &State) -> XResult<()> {
    match &state.invalid {
        Some(why) => bail!(XDAL_ERROR_CAPTURE_INVALIDATED, "stream capture #{} was invalidated: {why}", capture.id),
        None => Ok(()),
    }
}

fn stream_key(stream: &StreamObj) -> usize {
    stream as *const StreamObj as usize
}

impl Capture {
    fn invalidate(&self, why: &str) {
        let mut state = self.state.lock().ignore_poison();
        state.invalid.get_or_insert_with(|| why.to_string());
    }

    /// `XDAL_ERROR_CAPTURE_UNSUPPORTED` for `what`, which invalidates the
    /// capture.
    fn refuse(&self, what: &str) -> Error {
        let why = format!("{what} is not permitted while stream capture #{} is active", self.id);
        self.invalidate(&why);
        err!(XDAL_ERROR_CAPTURE_UNSUPPORTED, "{why}; the capture is invalidated")
    }

    /// The status `xdal_stream_get_capture_info` reports.
    pub fn status(&self) -> xdal_capture_status {
        if self.state.lock().ignore_poison().invalid.is_some() {
            xdal_capture_status::XDAL_CAPTURE_STATUS_INVALIDATED
        } else {
            xdal_capture_status::XDAL_CAPTURE_STATUS_ACTIVE
        }
    }

    fn is_live(&self) -> bool {
        !self.state.lock().ignore_poison().ended
    }
}

/// Whether `stream` takes part in a capture: what every enqueue asks.
/// While no capture is active anywhere, the answer is one load of a
/// process-wide flag word, not of the stream (three dependent loads away);
/// what to do when it captures is out of line (`of`, `record_on`). A
/// stream is only ever marked capturing while its capture is counted.
#[inline(always)]
pub(crate) fn capturing(stream: &StreamObj) -> bool {
    any_active() && stream.capturing.load(Acquire)
}

/// The capture `stream` takes part in, if any.
#[inline]
pub(crate) fn of(stream: &StreamObj) -> Option<Arc<Capture>> {
    if !capturing(stream) {
        return None;
    }
    of_capturing(stream)
}

#[cold]
#[inline(never)]
fn of_capturing(stream: &StreamObj) -> Option<Arc<Capture>> {
    stream.capture.lock().ignore_poison().clone()
}

/// Records `op` on `stream`, which `capturing` said captures (or did
/// until a moment ago: then the call is refused as out of date).
#[cold]
#[inline(never)]
pub(crate) fn record_on(stream: &StreamObj, op: impl FnOnce() -> Op) -> XResult<()> {
    match of(stream) {
        Some(capture) => record(&capture, stream, op()),
        None => bail!(XDAL_ERROR_INVALID_VALUE, "the stream's capture ended while this call was being made"),
    }
}

/// Starts capturing on `stream`.
pub(crate) fn begin(stream: &Arc<StreamObj>, mode: xdal_capture_mode) -> XResult<()> {
    let mut slot = stream.capture.lock().ignore_poison();
    if let Some(capture) = slot.as_ref() {
        bail!(XDAL_ERROR_INVALID_VALUE, "the stream already takes part in capture #{}", capture.id);
    }
    if stream.closed.load(Acquire) {
        bail!(XDAL_ERROR_INVALID_HANDLE, "the stream was destroyed (by another thread, during this call)");
    }
    let capture = Arc::new(Capture {
        id: NEXT_ID.fetch_add(1, Relaxed),
        mode,
        thread: std::thread::current().id(),
        device: stream.device,
        origin: stream_key(stream),
        state: Mutex::new(State::default()),
    });
    {
        let mut state = capture.state.lock().ignore_poison();
        state.tails.insert(stream_key(stream), Vec::new());
        state.streams.push(stream.clone());
    }
    let mut active = ACTIVE.lock().ignore_poison();
    active.retain(|c| c.strong_count() > 0);
    active.push(Arc::downgrade(&capture));
    crate::observe::set(crate::observe::CAPTURE, true);
    *slot = Some(capture);
    stream.capturing.store(true, Release);
    Ok(())
}

/// Records `op` as the next node of `stream`'s capture.
pub(crate) fn record(capture: &Capture, stream: &StreamObj, op: Op) -> XResult<()> {
    let mut state = capture.state.lock().ignore_poison();
    ensure_valid(capture, &state)?;
    let index = state.nodes.len();
    let deps = state.tails.insert(stream_key(stream), vec![index]).unwrap_or_default();
    state.nodes.push(Node { op, deps });
    Ok(())
}

/// `xdal_malloc_async` on a capturing stream: memory reserved for the
/// graph (a plain allocation, known to the registry so that captured work
/// may use it), and a node.
pub(crate) fn malloc(capture: &Capture, stream: &StreamObj, backend: &'static Backend, size: usize) -> XResult<usize> {
    ensure_valid(capture, &capture.state.lock().ignore_poison())?;
    let device = capture.device.get();
    let mut addr = std::ptr::null_mut();
    call!(backend, mem_alloc(device, size, &mut addr))?;
    let addr = addr as usize;
    REGISTRY.insert(Allocation { base: addr, size, memory: MemoryType::Device(device) });
    super::memory::reserve(addr);
    capture.state.lock().ignore_poison().memory.push((addr, size));
    record(capture, stream, Op::MemAlloc { addr, bytes: size })?;
    Ok(addr)
}

/// `xdal_free_async` on a capturing stream: only memory the capture
/// reserved can be freed in it.
pub(crate) fn free(capture: &Capture, stream: &StreamObj, addr: usize) -> XResult<()> {
    let owned = capture.state.lock().ignore_poison().memory.iter().any(|&(a, _)| a == addr);
    if !owned {
        return Err(capture.refuse(&format!(
            "xdal_free_async of {addr:#x}, which this capture did not allocate (only memory allocated in a capture \
             can be freed in it),"
        )));
    }
    // Later captured work may no longer use it; the graph keeps it.
    REGISTRY.remove_if(addr, |_| true);
    record(capture, stream, Op::MemFree { addr })
}

/// `xdal_event_record` on a capturing stream: the event marks the stream's
/// frontier in the capture, for other streams to wait on.
#[cold]
#[inline(never)]
pub(crate) fn record_event(stream: &StreamObj, event: &EventObj) -> XResult<()> {
    let Some(capture) = of(stream) else {
        bail!(XDAL_ERROR_INVALID_VALUE, "the stream's capture ended while this call was being made");
    };
    let capture = &capture;
    let state = capture.state.lock().ignore_poison();
    ensure_valid(capture, &state)?;
    let frontier = state.tails.get(&stream_key(stream)).cloned().unwrap_or_default();
    drop(state);
    *event.captured.lock().ignore_poison() = Some((Arc::downgrade(capture), frontier));
    event.capture_id.store(capture.id, Release);
    Ok(())
}

/// The live capture `event` was last recorded in, with its frontier.
fn event_point(event: &EventObj) -> Option<(Arc<Capture>, Vec<usize>)> {
    if event.capture_id.load(Acquire) == 0 {
        return None;
    }
    let captured = event.captured.lock().ignore_poison();
    let (capture, frontier) = captured.as_ref()?;
    let capture = capture.upgrade().filter(|c| c.is_live())?;
    Some((capture, frontier.clone()))
}

/// Forgets a capture point of `event` (it was recorded outside a capture).
#[inline]
pub(crate) fn clear_event(event: &EventObj) {
    if event.capture_id.load(Acquire) != 0 {
        event.capture_id.store(0, Release);
        *event.captured.lock().ignore_poison() = None;
    }
}

/// `xdal_stream_wait_event` where the stream or the event is part of a
/// capture. Ok(true): handled here; Ok(false): an ordinary wait.
#[inline]
pub(crate) fn wait_event(backend: &'static Backend, stream: &Arc<StreamObj>, event: &EventObj) -> XResult<bool> {
    if event.capture_id.load(Acquire) == 0 && !capturing(stream) {
        return Ok(false);
    }
    wait_event_captured(backend, stream, event)
}

#[cold]
#[inline(never)]
fn wait_event_captured(backend: &'static Backend, stream: &Arc<StreamObj>, event: &EventObj) -> XResult<bool> {
    let point = event_point(event);
    let own = of(stream);
    match (point, own) {
        (None, None) => Ok(false),
        (None, Some(capture)) => {
            // An event from outside the capture: fine once it is reached,
            // since the graph cannot wait for it at replay.
            match call!(backend, event_query(event.native)) {
                Ok(()) => Ok(true),
                Err(_) => Err(capture.refuse("waiting on an event recorded outside the capture and not yet reached")),
            }
        }
        (Some((capture, frontier)), own) => {
            if let Some(own) = own.filter(|own| !Arc::ptr_eq(own, &capture)) {
                return Err(own.refuse(&format!("waiting on an event of another capture (#{})", capture.id)));
            }
            if stream.device != capture.device {
                return Err(capture.refuse("joining a stream of another device"));
            }
            let mut state = capture.state.lock().ignore_poison();
            if state.ended {
                // The capture ended since the event's point was read: the
                // event is one recorded in a capture that is over, which
                // the stream does not wait for (it never ran).
                return Ok(true);
            }
            ensure_valid(&capture, &state)?;
            let key = stream_key(stream);
            if let Some(tail) = state.tails.get_mut(&key) {
                for node in frontier {
                    if !tail.contains(&node) {
                        tail.push(node);
                    }
                }
                return Ok(true);
            }
            // Fork: the stream joins the capture from the event's point,
            // unless it was destroyed or began a capture of its own since
            // `own` was read (the stream's slot decides, under its lock;
            // the capture's lock is held, so the capture cannot end first).
            let mut slot = stream.capture.lock().ignore_poison();
            if stream.closed.load(Acquire) {
                drop(slot);
                drop(state);
                return Err(capture.refuse("joining a stream that was destroyed meanwhile"));
            }
            if let Some(other) = slot.as_ref().filter(|other| !Arc::ptr_eq(other, &capture)) {
                let other = other.id;
                drop(slot);
                drop(state);
                return Err(capture.refuse(&format!("joining a stream that began capture #{other} meanwhile")));
            }
            state.tails.insert(key, frontier);
            state.streams.push(stream.clone());
            *slot = Some(Arc::clone(&capture));
            stream.capturing.store(true, Release);
            Ok(true)
        }
    }
}

/// Ends the capture begun on `stream`: the graph's nodes, or why not.
pub(crate) fn end(backend: &'static Backend, stream: &StreamObj) -> XResult<Captured> {
    let Some(capture) = of(stream) else {
        bail!(XDAL_ERROR_INVALID_VALUE, "the stream is not capturing");
    };
    if capture.origin != stream_key(stream) {
        capture.invalidate(
            "xdal_stream_end_capture was called on a stream that joined the capture, not the one that began it",
        );
        bail!(
            XDAL_ERROR_CAPTURE_INVALIDATED,
            "the stream joined capture #{} but did not begin it; end it on the stream that began it (the capture is \
             invalidated)",
            capture.id
        );
    }
    let mut state = {
        let mut guard = capture.state.lock().ignore_poison();
        let taken = std::mem::take(&mut *guard);
        guard.ended = true;
        taken
    };
    for joined in &state.streams {
        joined.capturing.store(false, Release);
        *joined.capture.lock().ignore_poison() = None;
    }
    let mut active = ACTIVE.lock().ignore_poison();
    active.retain(|c| c.upgrade().is_some_and(|c| c.id != capture.id && c.is_live()));
    crate::observe::set(crate::observe::CAPTURE, !active.is_empty());
    drop(active);
    if state.invalid.is_none() {
        if let Some(unjoined) = unjoined(&state) {
            state.invalid = Some(unjoined);
        }
    }
    if let Err(invalidated) = ensure_valid(&capture, &state) {
        super::memory::release(backend, capture.device, &state.memory);
        return Err(invalidated);
    }
    Ok(Captured { nodes: state.nodes, memory: state.memory, device: capture.device })
}

/// Why the capture cannot end: a joined stream whose last work the origin
/// does not wait for.
fn unjoined(state: &State) -> Option<String> {
    let origin = stream_key(&state.streams[0]);
    let mut reached: HashSet<usize> = HashSet::new();
    let mut stack: Vec<usize> = state.tails.get(&origin).cloned().unwrap_or_default();
    while let Some(node) = stack.pop() {
        if reached.insert(node) {
            stack.extend(&state.nodes[node].deps);
        }
    }
    let missing = state.streams[1..].iter().position(|stream| {
        state.tails.get(&stream_key(stream)).is_some_and(|tail| tail.iter().any(|node| !reached.contains(node)))
    })?;
    Some(format!(
        "stream {} of the capture was not joined back: the stream that began it must wait (through an event) for \
         the last work captured on every stream that joined",
        missing + 1
    ))
}

/// Refuses a call that a capture's mode forbids: `xdal_malloc`,
/// `xdal_free`, synchronous copies and sets. GLOBAL captures refuse them
/// from any thread, THREAD_LOCAL ones from their own thread only.
#[inline]
pub(crate) fn check_unsafe_call(what: &str) -> XResult<()> {
    if !any_active() {
        return Ok(());
    }
    check_unsafe_call_slowly(what)
}

#[cold]
fn check_unsafe_call_slowly(what: &str) -> XResult<()> {
    let me = std::thread::current().id();
    let active: Vec<Arc<Capture>> = ACTIVE.lock().ignore_poison().iter().filter_map(Weak::upgrade).collect();
    for capture in active.iter().filter(|c| c.is_live()) {
        let forbidden = match capture.mode {
            xdal_capture_mode::XDAL_CAPTURE_MODE_GLOBAL => true,
            xdal_capture_mode::XDAL_CAPTURE_MODE_THREAD_LOCAL => capture.thread == me,
            xdal_capture_mode::XDAL_CAPTURE_MODE_RELAXED => false,
        };
        if forbidden {
            return Err(capture.refuse(what));
        }
    }
    Ok(())
}

/// Refuses waiting for a device while one of its streams captures.
pub(crate) fn check_device_wait(device: DeviceIndex, what: &str) -> XResult<()> {
    if !any_active() {
        return Ok(());
    }
    let active: Vec<Arc<Capture>> = ACTIVE.lock().ignore_poison().iter().filter_map(Weak::upgrade).collect();
    match active.iter().find(|c| c.is_live() && c.device == device) {
        Some(capture) => Err(capture.refuse(what)),
        None => Ok(()),
    }
}

/// Closes `stream` for captures as its handle is destroyed: refused (and
/// the capture invalidated) while it takes part in one, so that no capture
/// is left that nobody can end.
pub(crate) fn close(stream: &StreamObj, what: &str) -> XResult<()> {
    let slot = stream.capture.lock().ignore_poison();
    if let Some(capture) = slot.as_ref() {
        let capture = Arc::clone(capture);
        drop(slot);
        return Err(capture.refuse(what));
    }
    stream.closed.store(true, Release);
    Ok(())
}

/// Refuses a synchronous or querying call on a capturing stream.
#[inline]
pub(crate) fn check_stream_wait(stream: &StreamObj, what: &str) -> XResult<()> {
    if capturing(stream) {
        return refuse_stream_wait(stream, what);
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn refuse_stream_wait(stream: &StreamObj, what: &str) -> XResult<()> {
    match of(stream) {
        Some(capture) => Err(capture.refuse(what)),
        None => Ok(()),
    }
}

/// Refuses a synchronous or querying call on an event recorded in a live
/// capture.
#[inline]
pub(crate) fn check_event_wait(event: &EventObj, what: &str) -> XResult<()> {
    if event.capture_id.load(Acquire) == 0 {
        return Ok(());
    }
    refuse_event_wait(event, what)
}

#[cold]
#[inline(never)]
fn refuse_event_wait(event: &EventObj, what: &str) -> XResult<()> {
    match event_point(event) {
        Some((capture, _)) => Err(capture.refuse(what)),
        None => Ok(()),
    }
}
