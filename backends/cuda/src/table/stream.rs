//! Stream entries. A native stream handle is an `Arc<Stream>` turned raw.
use super::stream_ref;
use crate::error::entry;
use crate::event::Event;
use crate::stream::Stream;
use std::ffi::{c_int, c_void};
use xdal_abi::*;

pub(super) unsafe extern "C" fn create(
    device: c_int,
    _flags: u32,
    priority: c_int,
    out: *mut xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        let stream = Stream::create(device as usize, priority)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { out.write(xdal_backend_support::arc_into_handle(stream)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn destroy(stream: xdal_backend_stream_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { xdal_backend_support::arc_from_handle::<Stream, _>(stream) });
        Ok(())
    })
}

pub(super) unsafe extern "C" fn query(stream: xdal_backend_stream_t) -> xdal_status_raw {
    // SAFETY: the front passes a live stream.
    entry(|| unsafe { stream_ref(stream) }.query())
}

pub(super) unsafe extern "C" fn synchronize(stream: xdal_backend_stream_t) -> xdal_status_raw {
    // SAFETY: the front passes a live stream.
    entry(|| unsafe { stream_ref(stream) }.synchronize())
}

pub(super) unsafe extern "C" fn wait_event(
    stream: xdal_backend_stream_t,
    event: xdal_backend_event_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes live handles; an event handle is an
        // `Arc<Event>` turned raw.
        let (stream, event) = unsafe { (stream_ref(stream), &*(event as *const Event)) };
        event.make_wait(&stream)
    })
}

pub(super) unsafe extern "C" fn launch_host_func(
    stream: xdal_backend_stream_t,
    func: xdal_host_fn_t,
    user_data: *mut c_void,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes a live stream.
        let stream = unsafe { stream_ref(stream) };
        crate::timing::around(&stream, || stream.launch_host_func(func, user_data))
    })
}
