//! Streams: one in-order OpenCL command queue each, flushed as `Flusher`
//! says. Host functions run in stream order on a thread of the stream's
//! own (never inside an OpenCL callback, where the runtime forbids blocking
//! calls): a marker says when the work before is done, and a user event
//! holds the work after until the function has returned.
use crate::device::Queue;
use crate::error::{failure, ClCall, ClResult, Failure};
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
    /// The last command enqueued: in order, its completion is the stream's.
    /// Held by value, not shared: a command costs no allocation, and who
    /// needs the event beyond the lock takes a reference of its own
    /// (`mark`, `synchronize`).
    last: Mutex<Option<ClEvent>>,
    /// The first failure seen, returned by every later query (sticky, as a
    /// device error is on CUDA).
    error: Mutex<Option<Failure>>,
    host: Mutex<Option<mpsc::Sender<HostCall>>>,
}

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
            last: Mutex::new(None),
            error: Mutex::new(None),
            host: Mutex::new(None),
        });
        dev.streams.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::downgrade(&stream));
        Ok(stream)
    }

    /// Enqueues one command (`command` returns its event), which becomes
    /// the stream's last, and sees that it starts (`Flusher`).
    pub fn enqueue(&self, what: &str, command: impl FnOnce(cl_command_queue) -> Result<cl_event, i32>) -> ClResult<()> {
        self.enqueue_then(what, command, |_| Ok(()))
    }

    /// As `enqueue`, then `then` with the command's event while it is still
    /// the stream's last.
    fn enqueue_then<T>(
        &self,
        what: &str,
        command: impl FnOnce(cl_command_queue) -> Result<cl_event, i32>,
        then: impl FnOnce(&ClEvent) -> ClResult<T>,
    ) -> ClResult<T> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let event = ClEvent(command(self.queue.0).cl(what)?);
        let timing = crate::timing::take();
        if timing != 0 {
            crate::timing::watch(event.0, self.device, timing);
        }
        let flushed = self.flusher.enqueued(&event);
        let result = then(&event);
        *last = Some(event);
        flushed.and(result)
    }

    /// A marker after all work enqueued so far; the caller holds a
    /// reference to it of its own.
    pub fn mark(&self) -> ClResult<ClEvent> {
        self.enqueue_then(
            "clEnqueueMarkerWithWaitList",
            |queue| {
                // SAFETY: the queue is live; an empty wait list.
                unsafe { cl3::command_queue::enqueue_marker_with_wait_list(queue, 0, std::ptr::null()) }
            },
            ClEvent::retained,
        )
    }

    /// The last command's event, with a reference of the caller's own.
    fn last(&self) -> ClResult<Option<ClEvent>> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(ClEvent::retained).transpose()
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
        // The status is read under the lock: no reference taken, no wait.
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let state = last.as_ref().map_or(Ok(()), |e| e.done("xdal_stream_query"));
        drop(last);
        self.sticky(state)
    }

    pub fn synchronize(&self) -> ClResult<()> {
        let finished = cl3::command_queue::finish(self.queue.0).cl("clFinish");
        let state = finished
            .and_then(|()| self.last())
            .and_then(|last| last.map_or(Ok(()), |e| e.wait("xdal_stream_synchronize")));
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
        self.enqueue("clEnqueueBarrierWithWaitList", |queue| {
            // SAFETY: the queue is live; the wait list holds one live user event.
            unsafe { cl3::command_queue::enqueue_barrier_with_wait_list(queue, 1, &gate_event) }
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
    /// `IN_FLIGHT` and `UNFLUSHED`, in one word so that a command's
    /// enqueue costs one atomic operation.
    state: AtomicU8,
}

/// A flushed command has a completion callback still to run.
const IN_FLIGHT: u8 = 1;
/// Commands were enqueued since the last flush.
const UNFLUSHED: u8 = 2;

impl Flusher {
    fn new(queue: Arc<Queue>) -> Flusher {
        Flusher { queue, state: AtomicU8::new(0) }
    }

    /// After a command (`event`) is enqueued: if a callback is in flight,
    /// marks the command for it to flush; else flushes it and watches for
    /// its completion. (Both bits change in single atomic operations on
    /// one word: a callback that clears `IN_FLIGHT` either sees the
    /// `UNFLUSHED` of a command marked before, and flushes it, or comes
    /// first, and the command's enqueue then finds nothing in flight and
    /// flushes it itself. No command is left unissued.)
    fn enqueued(self: &Arc<Self>, event: &ClEvent) -> ClResult<()> {
        if self.state.fetch_or(IN_FLIGHT | UNFLUSHED, Ordering::AcqRel) & IN_FLIGHT != 0 {
            return Ok(());
        }
        self.state.fetch_and(!UNFLUSHED, Ordering::AcqRel);
        cl3::command_queue::flush(self.queue.0).cl("clFlush")?;
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
            // called once, in stream order.
            unsafe { func(call.user_data as *mut c_void) };
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
        let _ = cl3::command_queue::flush(self.queue.0);
        let last = self.last.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        crate::opencl()
            .device(self.device)
            .retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((self.queue.clone(), last));
    }
}
