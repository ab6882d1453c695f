//! Event entries. A native event handle is an `Arc<Event>` turned raw.
use super::{stream_ref, touch, write_out};
use crate::error::entry;
use crate::event::Event;
use std::ffi::c_int;
use std::sync::Arc;
use xdal_abi::*;

/// Borrows the event behind a live native handle.
///
/// # Safety
/// `handle` must come from `create` and not be destroyed (the front checks).
unsafe fn event_ref<'a>(handle: xdal_backend_event_t) -> &'a Event {
    // SAFETY: per the contract above, the Arc behind it is alive.
    unsafe { &*(handle as *const Event) }
}

pub(super) unsafe extern "C" fn create(device: c_int, flags: u32, out: *mut xdal_backend_event_t) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        let event = Arc::new(Event::new(device as usize, flags & XDAL_EVENT_DISABLE_TIMING == 0));
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, Arc::into_raw(event) as xdal_backend_event_t) }
    })
}

pub(super) unsafe extern "C" fn destroy(event: xdal_backend_event_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once; a pending
        // record keeps its own marker alive.
        drop(unsafe { Arc::from_raw(event as *const Event) });
        Ok(())
    })
}

pub(super) unsafe extern "C" fn record(event: xdal_backend_event_t, stream: xdal_backend_stream_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes live handles.
        let (event, stream) = unsafe { (event_ref(event), stream_ref(stream)) };
        touch(stream.device)?;
        event.record(&stream);
        Ok(())
    })
}

pub(super) unsafe extern "C" fn query(event: xdal_backend_event_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live handle (the front checks).
        let event = unsafe { event_ref(event) };
        touch(event.device)?;
        event.query()
    })
}

pub(super) unsafe extern "C" fn synchronize(event: xdal_backend_event_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live handle (the front checks).
        let event = unsafe { event_ref(event) };
        touch(event.device)?;
        event.synchronize()
    })
}

pub(super) unsafe extern "C" fn elapsed_time(
    ms: *mut f32,
    start: xdal_backend_event_t,
    end: xdal_backend_event_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes live handles.
        let value = Event::elapsed_ms(unsafe { event_ref(start) }, unsafe { event_ref(end) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(ms, value) }
    })
}
