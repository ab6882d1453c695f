//! The front's stream and event objects: a backend handle plus what the
//! front must answer without asking the backend. C sees them only through
//! handle tables; the backend object is destroyed when the last reference
//! goes, so a call racing with a destroy never reaches a freed backend
//! object.
use crate::backend::{backend, call, Backend};
use crate::error::{bail, err, XResult};
use crate::handles::HandleTable;
use crate::threads::current_device;
use std::ffi::c_int;
use std::sync::Arc;
use xdal_abi::*;

pub(crate) struct StreamObj {
    pub native: xdal_backend_stream_t,
    pub device: c_int,
    pub priority: c_int,
    backend: &'static Backend,
}

// SAFETY: `native` is an opaque token that backends must accept from any
// thread (the table contract); the other fields are plain data.
unsafe impl Send for StreamObj {}
// SAFETY: as above; nothing is mutated after creation.
unsafe impl Sync for StreamObj {}

impl StreamObj {
    pub fn create(
        backend: &'static Backend,
        device: c_int,
        flags: u32,
        priority: c_int,
    ) -> XResult<Arc<StreamObj>> {
        let mut native: xdal_backend_stream_t = std::ptr::null_mut();
        call!(backend, stream_create(device, flags, priority, &mut native))?;
        Ok(Arc::new(StreamObj {
            native,
            device,
            priority,
            backend,
        }))
    }
}

impl Drop for StreamObj {
    fn drop(&mut self) {
        // Nothing to report to: the handle is gone. A failure here would be
        // a backend bug that leaks one stream.
        let _ = call!(self.backend, stream_destroy(self.native));
    }
}

pub(crate) struct EventObj {
    pub native: xdal_backend_event_t,
    backend: &'static Backend,
}

// SAFETY: as for StreamObj.
unsafe impl Send for EventObj {}
// SAFETY: as for StreamObj.
unsafe impl Sync for EventObj {}

impl EventObj {
    pub fn create(backend: &'static Backend, device: c_int, flags: u32) -> XResult<Arc<EventObj>> {
        let mut native: xdal_backend_event_t = std::ptr::null_mut();
        call!(backend, event_create(device, flags, &mut native))?;
        Ok(Arc::new(EventObj { native, backend }))
    }
}

impl Drop for EventObj {
    fn drop(&mut self) {
        let _ = call!(self.backend, event_destroy(self.native));
    }
}

pub(crate) static STREAMS: HandleTable<StreamObj> = HandleTable::new(0xA151);
pub(crate) static EVENTS: HandleTable<EventObj> = HandleTable::new(0xA1E7);

/// The stream a caller named: NULL is the current device's default stream.
#[inline]
pub(crate) fn stream(handle: xdal_stream_t) -> XResult<Arc<StreamObj>> {
    if handle.is_null() {
        return backend()?.default_stream(current_device());
    }
    STREAMS.get(handle as usize).ok_or_else(|| {
        err!(
            XDAL_ERROR_INVALID_HANDLE,
            "{handle:p} is not a live stream (destroyed, or not a stream handle)"
        )
    })
}

/// The event a caller named.
#[inline]
pub(crate) fn event(handle: xdal_event_t) -> XResult<Arc<EventObj>> {
    if handle.is_null() {
        bail!(XDAL_ERROR_INVALID_HANDLE, "the event handle is NULL");
    }
    EVENTS.get(handle as usize).ok_or_else(|| {
        err!(
            XDAL_ERROR_INVALID_HANDLE,
            "{handle:p} is not a live event (destroyed, or not an event handle)"
        )
    })
}
