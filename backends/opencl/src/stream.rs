//! Streams: one in-order OpenCL command queue each, flushed as `Flusher`
//! says. Host functions run in stream order on a thread of the stream's
//! own (never inside an OpenCL callback, where the runtime forbids blocking
//! calls): a marker says when the work before is done, and a user event
//! holds the work after until the function has returned.
use crate::command;
use crate::device::Queue;
use crate::error::{cl_failure, failure, ClCall, ClResult, Failure};
use crate::event::ClEvent;
use cl3::types::{cl_command_queue, cl_event};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use xdal_abi::xdal_host_fn_t;

struct HostCall {
    after: ClEvent,
    gate: ClEvent,
    /// Slots for the function's start and end (`time_next_enqueue`; 0: none).
    timing: usize,
    func: xdal_host_fn_t,
    user_data: usize,
}

pub(crate) struct Stream {
    pub device: usize,
    queue: Arc<Queue>,
    flusher: Arc<Flusher>,
    tail: Mutex<Tail>,
    /// The first failure seen, returned by every later query (sticky, as a
    /// device error is on CUDA).
    error: Mutex<Option<Failure>>,
    host: Mutex<Option<mpsc::Sender<HostCall>>>,
}

/// Where the stream's work ends: the last command with an event. Commands
/// ask the runtime for an event only when something waits on them (the
/// flusher, the tracer, an event record); the others go without, and say
/// so in the flusher's word (`UNMARKED`): a query or synchronization that
/// finds such commands after the last event enqueues a marker to have one.
/// Held by value, not shared: who needs it beyond the lock takes a
/// reference of its own.
struct Tail {
    last: Option<ClEvent>,
}

/// A command to enqueue: given the queue and where to write its event
/// (NULL: no event wanted), as OpenCL's enqueue calls take them.
pub(crate) trait Command: FnOnce(cl_command_queue, *mut cl_event) -> Result<(), i32> {}
impl<F: FnOnce(cl_command_queue, *mut cl_event) -> Result<(), i32>> Command for F {}

// SAFETY: OpenCL queues are thread-safe by the specification; the rest is
// behind mutexes.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream on `device` with `priority` (within `priority_range`),
    /// known to the device for its synchronization.
    pub fn create(device: usize, priority: i32) -> ClResult<Arc<Stream>> {
        let cl = crate::opencl();
        let dev = cl.device(device);
        dev.prune_retired();
        let queue = Arc::new(Queue(crate::device::create_queue(cl.context.0, dev, priority)?));
        let flusher = Arc::new(Flusher::new(queue.clone()));
        let stream = Arc::new(Stream {
            device,
            queue,
            flusher,
            tail: Mutex::new(Tail { last: None }),
            error: Mutex::new(None),
            host: Mutex::new(None),
        });
        dev.streams.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::downgrade(&stream));
        Ok(stream)
    }

    /// Enqueues one command and sees that it starts (`Flusher`). Inlined
    /// into each operation, this is only the common case (see
    /// `push_unmarked`); everything else is out of line, so that the
    /// common case keeps its few values in registers.
    #[inline]
    pub fn enqueue(&self, what: &str, command: impl Command) -> ClResult<()> {
        if !crate::timing::asked() && self.flusher.in_flight() {
            return self.push_unmarked(what, command);
        }
        self.push_cold(what, command)
    }

    #[inline(never)]
    fn push_cold(&self, what: &str, command: impl Command) -> ClResult<()> {
        self.push(what, command, false).map(drop)
    }

    /// A marker after all work enqueued so far; the caller holds a
    /// reference to it of its own.
    pub fn mark(&self) -> ClResult<ClEvent> {
        let marker = self.push(
            "clEnqueueMarkerWithWaitList",
            // SAFETY: the queue is live.
            |queue, event| unsafe { command::marker(queue, event) },
            true,
        )?;
        Ok(marker.expect("a kept command has its event"))
    }

    /// Enqueues `command`, with an event where something waits on it, and
    /// returns a reference of the caller's own to that event if `keep`.
    fn push(&self, what: &str, command: impl Command, keep: bool) -> ClResult<Option<ClEvent>> {
        let timing = crate::timing::take();
        if !keep && timing == 0 && self.flusher.in_flight() {
            return self.push_unmarked(what, command).map(|()| None);
        }
        let mut tail = self.lock_tail();
        let wanted = keep || timing != 0 || !self.flusher.in_flight();
        let mut event = match self.enqueue_marking(command, wanted) {
            Ok(event) => event,
            Err(code) => {
                crate::timing::now(timing);
                return Err(cl_failure(what, code));
            }
        };
        if timing != 0 {
            match &event {
                Some(e) => crate::timing::watch(e.0, self.device, timing),
                None => crate::timing::now(timing),
            }
        }
        let mut flushed = Ok(());
        if self.flusher.enqueued(event.is_none()) {
            // Nothing flushed is running (it completed since `in_flight`
            // was read, if this command went without an event): this one
            // starts now and is watched, through a marker if need be.
            event = event.or_else(|| self.marker());
            flushed = self.flusher.flush_watching(event.as_ref());
        }
        let kept = if keep { event.as_ref().map(ClEvent::retained).transpose() } else { Ok(None) };
        if let Some(event) = event {
            tail.last = Some(event);
        }
        drop(tail);
        flushed.and(kept)
    }

    /// The common case, taken without the tail's lock: a command nothing
    /// waits on, enqueued while a flushed command's callback is still to
    /// run, goes without an event and is marked for that callback to flush
    /// (one atomic operation). Only if the callback ran in the meantime
    /// does it take the lock, to start and watch the command itself, as
    /// `push` does. (One path for both, with the lock taken lazily, cost
    /// this one some 80 instructions a command.)
    #[inline]
    fn push_unmarked(&self, what: &str, command: impl Command) -> ClResult<()> {
        if let Err(code) = command(self.queue.0, std::ptr::null_mut()) {
            return Err(cl_failure(what, code));
        }
        if !self.flusher.enqueued(true) {
            return Ok(());
        }
        self.flush_unmarked()
    }

    /// `push_unmarked` when the callback ran meanwhile: starts the command
    /// and watches it through a marker.
    #[cold]
    #[inline(never)]
    fn flush_unmarked(&self) -> ClResult<()> {
        let mut tail = self.lock_tail();
        let marker = self.marker();
        let flushed = self.flusher.flush_watching(marker.as_ref());
        if marker.is_some() {
            tail.last = marker;
        }
        flushed
    }

    /// Enqueues `command`, with an event if `wanted`. `UNMARKED` is cleared
    /// before a command with an event (one without, enqueued after it,
    /// sets it again after its own enqueue), and set again if the command
    /// gives no event after all.
    fn enqueue_marking(&self, command: impl Command, wanted: bool) -> Result<Option<ClEvent>, i32> {
        let was_unmarked = wanted && self.flusher.clear_unmarked();
        let mut raw: cl_event = std::ptr::null_mut();
        let result = command(self.queue.0, if wanted { &mut raw } else { std::ptr::null_mut() });
        let event = (result.is_ok() && !raw.is_null()).then_some(ClEvent(raw));
        if was_unmarked && event.is_none() {
            self.flusher.set_unmarked();
        }
        result.map(|()| event)
    }

    /// A marker enqueued directly, with its event (None if the runtime
    /// refuses it).
    fn marker(&self) -> Option<ClEvent> {
        // SAFETY: the queue is live.
        self.enqueue_marking(|queue, event| unsafe { command::marker(queue, event) }, true).ok().flatten()
    }

    fn lock_tail(&self) -> std::sync::MutexGuard<'_, Tail> {
        self.tail.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An event that completes with all the work enqueued so far (None
    /// when there was none), with a reference of the caller's own.
    fn last(&self) -> ClResult<Option<ClEvent>> {
        let tail = self.lock_tail();
        if self.flusher.unmarked() {
            drop(tail);
            return self.mark().map(Some);
        }
        tail.last.as_ref().map(ClEvent::retained).transpose()
    }

    fn sticky(&self, result: ClResult<()>) -> ClResult<()> {
        let mut error = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(failure) = error.as_ref() {
            return Err(failure.clone());
        }
        if let Err(failure) = &result {
            if failure.status != xdal_abi::xdal_status::XDAL_ERROR_NOT_READY {
                *error = Some(failure.clone());
            }
        }
        result
    }

    /// Makes `failure` the stream's error, unless it has one: what a kernel
    /// refuses is reported at the next synchronization and every one after.
    pub fn fail(&self, failure: Failure) {
        let mut error = self.error.lock().unwrap_or_else(|p| p.into_inner());
        error.get_or_insert(failure);
    }

    pub fn query(&self) -> ClResult<()> {
        let tail = self.lock_tail();
        let state = if self.flusher.unmarked() {
            drop(tail);
            self.mark().and_then(|marker| marker.done("xdal_stream_query"))
        } else {
            // The status is read under the lock: no reference taken, no wait.
            tail.last.as_ref().map_or(Ok(()), |e| e.done("xdal_stream_query"))
        };
        self.sticky(state)
    }

    pub fn synchronize(&self) -> ClResult<()> {
        let state = self.last().and_then(|last| {
            cl3::command_queue::finish(self.queue.0).cl("clFinish")?;
            last.map_or(Ok(()), |e| e.wait("xdal_stream_synchronize"))
        });
        self.sticky(state)
    }

    /// Runs `func(user_data)` once the work enqueued so far is done; work
    /// enqueued later waits for it to return.
    pub fn launch_host_func(&self, func: xdal_host_fn_t, user_data: *mut c_void) -> ClResult<()> {
        // Timed by the thread that runs it, not by the marker's command.
        let timing = crate::timing::take();
        let cl = crate::opencl();
        let after = self.mark()?;
        let gate = ClEvent(cl3::event::create_user_event(cl.context.0).cl("clCreateUserEvent")?);
        let gate_event = gate.0;
        let mut host = self.host.lock().unwrap_or_else(|p| p.into_inner());
        if host.is_none() {
            let (sender, receiver) = mpsc::channel::<HostCall>();
            std::thread::Builder::new()
                .name(format!("xdal-opencl-host-{}", self.device))
                .spawn(move || run_host_calls(receiver))
                .map_err(|e| failure!(XDAL_ERROR_OUT_OF_MEMORY, "no thread for host functions: {e}"))?;
            *host = Some(sender);
        }
        self.enqueue("clEnqueueBarrierWithWaitList", |queue, event| {
            // SAFETY: the queue is live; the wait list holds one live user event.
            unsafe { command::barrier(queue, &[gate_event], event) }
        })?;
        let call = HostCall { after, gate, timing, func, user_data: user_data as usize };
        host.as_ref()
            .expect("started above")
            .send(call)
            .map_err(|_| failure!(XDAL_ERROR_INTERNAL, "the stream's host-function thread has stopped"))
    }
}

/// When a stream's commands are issued. OpenCL issues a queue's commands
/// to the device only at a flush; xdal's work, as CUDA's, starts without
/// one. A flush after every command costs several microseconds on PoCL (it
/// wakes the runtime's threads), a large part of a launch. So a command is
/// flushed at once only when nothing flushed before it is still running;
/// otherwise it waits for the running command's completion callback, which
/// flushes whatever came in the meantime. Every command is issued by the
/// time the commands before it have completed, with one flush per busy
/// period instead of one per command.
struct Flusher {
    queue: Arc<Queue>,
    /// `IN_FLIGHT`, `UNFLUSHED` and the stream's `UNMARKED`, in one word
    /// so that a command's enqueue costs one atomic operation.
    state: AtomicU8,
}

/// A flushed command has a completion callback still to run.
const IN_FLIGHT: u8 = 1;
/// Commands were enqueued since the last flush.
const UNFLUSHED: u8 = 2;
/// Commands without an event may follow the stream's last event (`Tail`).
/// Cleared before a command with an event is enqueued, set after one
/// without: a command enqueued after the last event has always set it
/// by the time its enqueue returns (it may also be set needlessly, which
/// costs a marker, never a wrong answer).
const UNMARKED: u8 = 4;

impl Flusher {
    fn new(queue: Arc<Queue>) -> Flusher {
        Flusher { queue, state: AtomicU8::new(0) }
    }

    /// Whether a flushed command's completion callback is still to run
    /// (then the next command needs no event of its own: the callback
    /// flushes it).
    fn in_flight(&self) -> bool {
        self.state.load(Ordering::Relaxed) & IN_FLIGHT != 0
    }

    /// After a command is enqueued: if a callback is in flight, marks the
    /// command for it to flush and returns false; else returns true, and
    /// the caller flushes it with `flush_watching`. (Both bits change in
    /// single atomic operations on one word: a callback that clears
    /// `IN_FLIGHT` either sees the `UNFLUSHED` of a command marked before,
    /// and flushes it, or comes first, and the command's enqueue then finds
    /// nothing in flight and flushes it itself. No command is left
    /// unissued.)
    /// `unmarked`: the command went without an event (`UNMARKED`).
    fn enqueued(&self, unmarked: bool) -> bool {
        let bits = if unmarked { IN_FLIGHT | UNFLUSHED | UNMARKED } else { IN_FLIGHT | UNFLUSHED };
        self.state.fetch_or(bits, Ordering::AcqRel) & IN_FLIGHT == 0
    }

    /// Before a command with an event is enqueued: clears `UNMARKED`, and
    /// says whether it was set (to set it again if the enqueue fails).
    fn clear_unmarked(&self) -> bool {
        self.state.fetch_and(!UNMARKED, Ordering::AcqRel) & UNMARKED != 0
    }

    /// A command with an event was not enqueued after all: the commands
    /// without one before it are still unmarked.
    fn set_unmarked(&self) {
        self.state.fetch_or(UNMARKED, Ordering::AcqRel);
    }

    /// Whether commands without an event may follow the last event.
    fn unmarked(&self) -> bool {
        self.state.load(Ordering::Acquire) & UNMARKED != 0
    }

    /// Flushes the queue and watches `event`, the last command, for its
    /// completion; with no event to watch, nothing is in flight after the
    /// flush, and the next command flushes itself.
    fn flush_watching(self: &Arc<Self>, event: Option<&ClEvent>) -> ClResult<()> {
        self.state.fetch_and(!UNFLUSHED, Ordering::AcqRel);
        cl3::command_queue::flush(self.queue.0).cl("clFlush")?;
        let Some(event) = event else {
            self.complete();
            return Ok(());
        };
        let watcher = Arc::into_raw(self.clone()).cast_mut().cast::<c_void>();
        let watched = cl3::event::set_event_callback(event.0, cl3::event::CL_COMPLETE, flush_after, watcher);
        if watched.is_err() {
            // SAFETY: the callback was not registered: this reference is
            // still ours to give back.
            let flusher = unsafe { Arc::from_raw(watcher.cast::<Flusher>()) };
            // Nothing watches: whatever was marked meanwhile is flushed
            // here, and every later command flushes itself.
            flusher.complete();
            watched.cl("clSetEventCallback")?;
        }
        Ok(())
    }

    /// The watched command completed: flushes what was enqueued after it.
    fn complete(&self) {
        if self.state.fetch_and(!(IN_FLIGHT | UNFLUSHED), Ordering::AcqRel) & UNFLUSHED != 0 {
            // A failed flush leaves the commands to the next
            // synchronization (clFinish issues them); no caller to report
            // it to here.
            let _ = cl3::command_queue::flush(self.queue.0);
        }
    }
}

/// The completion callback of a flushed command. clFlush is not among the
/// calls a callback must not make.
extern "C" fn flush_after(_event: cl_event, _status: i32, watcher: *mut c_void) {
    // SAFETY: `enqueued` gave this callback one reference to the flusher.
    let flusher = unsafe { Arc::from_raw(watcher.cast_const().cast::<Flusher>()) };
    flusher.complete();
}

/// The host-function thread of one stream: each function after its
/// marker, in order; then the work behind it is let go.
fn run_host_calls(calls: mpsc::Receiver<HostCall>) {
    for call in calls {
        // A failed marker still lets the function run: the stream's error
        // is reported by its queries, as on CUDA.
        let _ = cl3::event::wait_for_events(&[call.after.0]);
        let start = crate::timing::monotonic_ns();
        if let Some(func) = call.func {
            // SAFETY: the caller gave a function and its argument to be
            // called once, in stream order; marked as a callback (a waiting
            // xdal call from it is refused).
            xdal_backend_support::callback::run_callback(|| unsafe { func(call.user_data as *mut c_void) });
        }
        if call.timing != 0 {
            crate::timing::write(call.timing, start, crate::timing::monotonic_ns());
        }
        let _ = cl3::event::set_user_event_status(call.gate.0, cl3::event::CL_COMPLETE);
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Pending work still completes; the device keeps the queue, and the
        // last command, until a device synchronization has waited for it
        // or it is done.
        let last = self.tail.get_mut().unwrap_or_else(|p| p.into_inner()).last.take();
        let last = if self.flusher.unmarked() { self.marker() } else { last };
        let _ = cl3::command_queue::flush(self.queue.0);
        crate::opencl()
            .device(self.device)
            .retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((self.queue.clone(), last));
    }
}
