//! Event entries. A native event handle is an `Arc<Event>` turned raw.
use super::stream_ref;
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

pub(super) unsafe extern "C" fn create(_device: c_int, flags: u32, out: *mut xdal_backend_event_t) -> xdal_status_raw {
    entry(|| {
        let event = Arc::new(Event::new(flags & XDAL_EVENT_DISABLE_TIMING == 0));
        // SAFETY: the front passes a valid output pointer.
        unsafe { out.write(xdal_backend_support::arc_into_handle(event)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn destroy(event: xdal_backend_event_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once; a pending
        // marker stays alive in the runtime.
        drop(unsafe { xdal_backend_support::arc_from_handle::<Event, _>(event) });
        Ok(())
    })
}

pub(super) unsafe extern "C" fn record(event: xdal_backend_event_t, stream: xdal_backend_stream_t) -> xdal_status_raw {
    // SAFETY: the front passes live handles.
    entry(|| unsafe { event_ref(event).record(&stream_ref(stream)) })
}

pub(super) unsafe extern "C" fn query(event: xdal_backend_event_t) -> xdal_status_raw {
    // SAFETY: the front passes a live event.
    entry(|| unsafe { event_ref(event) }.query())
}

pub(super) unsafe extern "C" fn synchronize(event: xdal_backend_event_t) -> xdal_status_raw {
    // SAFETY: the front passes a live event.
    entry(|| unsafe { event_ref(event) }.synchronize())
}

pub(super) unsafe extern "C" fn elapsed_time(
    ms: *mut f32,
    start: xdal_backend_event_t,
    end: xdal_backend_event_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes live events and a valid output pointer.
        let value = unsafe { Event::elapsed_ms(event_ref(start), event_ref(end))? };
        // SAFETY: as above.
        unsafe { ms.write(value) };
        Ok(())
    })
}
