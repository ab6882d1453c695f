//! Events: points in a stream's work, with timestamps when timing is on.
use crate::backend::{backend, call};
use crate::error::{bail, boundary, err, Out};
use crate::graph::capture;
use crate::objects::{insert_handle, EventObj, EVENTS};
use crate::threads::current_device;
use xdal_abi::*;

/// Creates an event on the current device. `flags`: `XDAL_EVENT_DEFAULT`
/// (timing on) or `XDAL_EVENT_DISABLE_TIMING`.
#[no_mangle]
pub extern "C" fn xdal_event_create(event: *mut xdal_event_t, flags: u32) -> xdal_status_t {
    boundary(c"xdal_event_create", || {
        let out = Out::new(event, "event")?;
        if flags & !XDAL_EVENT_FLAGS_ALL != 0 {
            bail!(XDAL_ERROR_INVALID_VALUE, "unknown event flags {flags:#x}");
        }
        let backend = backend()?;
        let device = backend.device(current_device())?;
        let object = EventObj::create(backend, device, flags)?;
        let handle = insert_handle(&EVENTS, object, "events")?;
        out.write(handle as xdal_event_t);
        Ok(())
    })
}

/// Destroys an event; a pending record still completes. The handle is
/// invalid from now on.
#[no_mangle]
pub extern "C" fn xdal_event_destroy(event: xdal_event_t) -> xdal_status_t {
    boundary(c"xdal_event_destroy", || {
        EVENTS.remove(event as usize).map(drop).ok_or_else(|| {
            err!(XDAL_ERROR_INVALID_HANDLE, "{event:p} is not a live event (destroyed, or not an event handle)")
        })
    })
}

/// Captures in `event` the point after all work enqueued on `stream` so far
/// (any device's stream). Re-recording captures a new point; waits already
/// enqueued keep the old one.
#[no_mangle]
pub extern "C" fn xdal_event_record(event: xdal_event_t, stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_event_record", || {
        let event = crate::objects::event(event)?;
        let stream = crate::objects::stream(stream)?;
        if capture::capturing(&stream) {
            return capture::record_event(&stream, &event);
        }
        capture::clear_event(&event);
        crate::dispatch::event::record(backend()?, &event, &stream)
    })
}

/// `XDAL_SUCCESS` when the recorded point is reached (or the event was
/// never recorded), else `XDAL_ERROR_NOT_READY`; the stream's sticky error
/// if its work failed before the point.
#[no_mangle]
pub extern "C" fn xdal_event_query(event: xdal_event_t) -> xdal_status_t {
    boundary(c"xdal_event_query", || {
        let event = crate::objects::event(event)?;
        capture::check_event_wait(&event, "xdal_event_query of an event recorded in the capture")?;
        call!(backend()?, event_query(event.native))
    })
}

/// Waits until the recorded point is reached (at once if never recorded).
#[no_mangle]
pub extern "C" fn xdal_event_synchronize(event: xdal_event_t) -> xdal_status_t {
    boundary(c"xdal_event_synchronize", || {
        let event = crate::objects::event(event)?;
        crate::threads::refuse_wait_in_callback("xdal_event_synchronize")?;
        capture::check_event_wait(&event, "xdal_event_synchronize of an event recorded in the capture")?;
        call!(backend()?, event_synchronize(event.native))
    })
}

/// Writes the milliseconds from `start`'s point to `end`'s. Both must be
/// timed (no `XDAL_EVENT_DISABLE_TIMING`) and recorded, else
/// `XDAL_ERROR_INVALID_VALUE`; `XDAL_ERROR_NOT_READY` while either is pending.
#[no_mangle]
pub extern "C" fn xdal_event_elapsed_time(ms: *mut f32, start: xdal_event_t, end: xdal_event_t) -> xdal_status_t {
    boundary(c"xdal_event_elapsed_time", || {
        let out = Out::new(ms, "ms")?;
        let (start, end) = (crate::objects::event(start)?, crate::objects::event(end)?);
        for event in [&start, &end] {
            capture::check_event_wait(event, "xdal_event_elapsed_time of an event recorded in the capture")?;
        }
        out.write(crate::dispatch::event::elapsed_ms(backend()?, &start, &end)?);
        Ok(())
    })
}
