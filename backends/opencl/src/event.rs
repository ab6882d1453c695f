//! Events: a marker command enqueued where the event is recorded; timed
//! events read the marker's profiling timestamps.
use crate::error::{failure, ClCall, ClResult};
use crate::stream::Stream;
use cl3::event::{CL_COMPLETE, CL_EVENT_COMMAND_EXECUTION_STATUS, CL_PROFILING_COMMAND_END};
use cl3::types::cl_event;
use std::sync::{Arc, Mutex};

/// An OpenCL event this backend holds one reference to.
pub(crate) struct ClEvent(pub cl_event);

// SAFETY: OpenCL events are thread-safe by the specification.
unsafe impl Send for ClEvent {}
// SAFETY: as above.
unsafe impl Sync for ClEvent {}

impl Drop for ClEvent {
    fn drop(&mut self) {
        // SAFETY: this object owned one reference; it gives it up here.
        let _ = unsafe { cl3::event::release_event(self.0) };
    }
}

impl ClEvent {
    /// The command's execution status: `CL_COMPLETE` (0), a state before
    /// it (positive), or the error it ended with (negative).
    pub fn status(&self) -> ClResult<i32> {
        Ok(cl3::event::get_event_info(self.0, CL_EVENT_COMMAND_EXECUTION_STATUS).cl("clGetEventInfo")?.into())
    }

    /// SUCCESS when the command completed, NOT_READY before, and its error
    /// after one.
    pub fn done(&self, what: &str) -> ClResult<()> {
        match self.status()? {
            CL_COMPLETE => Ok(()),
            s if s < 0 => Err(failure!(
                XDAL_ERROR_LAUNCH_FAILED,
                "{what}: a command failed with OpenCL status {s} ({})",
                cl3::error_codes::error_text(s)
            )),
            _ => Err(failure!(XDAL_ERROR_NOT_READY, "{what}: not complete")),
        }
    }

    /// Another reference to the same event, owned by the caller.
    pub fn retained(&self) -> ClResult<ClEvent> {
        // SAFETY: a live event this object holds a reference to.
        unsafe { cl3::event::retain_event(self.0) }.cl("clRetainEvent")?;
        Ok(ClEvent(self.0))
    }

    pub fn wait(&self, what: &str) -> ClResult<()> {
        // clWaitForEvents reports a failed command as an error of its own.
        let waited = cl3::event::wait_for_events(&[self.0]);
        match waited {
            Ok(()) => self.done(what),
            Err(_) => self.done(what).and(Err(failure!(XDAL_ERROR_LAUNCH_FAILED, "{what}: a command failed"))),
        }
    }
}

pub(crate) struct Event {
    timing: bool,
    marker: Mutex<Option<Arc<ClEvent>>>,
}

impl Event {
    pub fn new(timing: bool) -> Event {
        Event { timing, marker: Mutex::new(None) }
    }

    fn marker(&self) -> Option<Arc<ClEvent>> {
        self.marker.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn record(&self, stream: &Stream) -> ClResult<()> {
        let marker = Arc::new(stream.mark()?);
        *self.marker.lock().unwrap_or_else(|p| p.into_inner()) = Some(marker);
        Ok(())
    }

    pub fn query(&self) -> ClResult<()> {
        self.marker().map_or(Ok(()), |m| m.done("xdal_event_query"))
    }

    pub fn synchronize(&self) -> ClResult<()> {
        self.marker().map_or(Ok(()), |m| m.wait("xdal_event_synchronize"))
    }

    /// Makes `stream`'s later work wait for the recorded point.
    pub fn make_wait(&self, stream: &Stream) -> ClResult<()> {
        match self.marker() {
            None => Ok(()),
            Some(m) => stream.enqueue("clEnqueueBarrierWithWaitList", |queue, event| {
                // SAFETY: the queue is live; the wait list holds one live event.
                unsafe { crate::command::barrier(queue, &[m.0], event) }
            }),
        }
    }

    pub fn elapsed_ms(start: &Event, end: &Event) -> ClResult<f32> {
        let (Some(a), Some(b)) = (start.marker(), end.marker()) else {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "an event was never recorded"));
        };
        if !start.timing || !end.timing {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "an event was created with XDAL_EVENT_DISABLE_TIMING"));
        }
        a.done("xdal_event_elapsed_time")?;
        b.done("xdal_event_elapsed_time")?;
        let at = |e: &ClEvent| -> ClResult<u64> {
            Ok(cl3::event::get_event_profiling_info(e.0, CL_PROFILING_COMMAND_END)
                .cl("clGetEventProfilingInfo")?
                .into())
        };
        let (t0, t1) = (at(&a)?, at(&b)?);
        Ok(((t1 as f64 - t0 as f64) / 1e6) as f32)
    }
}
