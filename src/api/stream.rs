//! Streams: in-order queues of work on one device.
use crate::backend::{backend, call};
use crate::error::{bail, boundary, err, require, Out};
use crate::graph::capture;
use crate::graph::node::Op;
use crate::objects::{default_stream_device, default_stream_handle, insert_handle, StreamObj, STREAMS};
use crate::threads::current_device;
use crate::trace::activity::{self, Info};
use std::ffi::{c_int, c_void};
use xdal_abi::*;

/// Creates a stream on the current device. `flags`: `XDAL_STREAM_DEFAULT`
/// or `XDAL_STREAM_NON_BLOCKING`; `priority` within
/// `xdal_device_get_stream_priority_range` (lower is more urgent).
#[no_mangle]
pub extern "C" fn xdal_stream_create(stream: *mut xdal_stream_t, flags: u32, priority: c_int) -> xdal_status_t {
    boundary(c"xdal_stream_create", || {
        let out = Out::new(stream, "stream")?;
        if flags & !XDAL_STREAM_FLAGS_ALL != 0 {
            bail!(XDAL_ERROR_INVALID_VALUE, "unknown stream flags {flags:#x}");
        }
        let backend = backend()?;
        let device = backend.device(current_device())?;
        let (least, greatest) = (backend.priority_least, backend.priority_greatest);
        if priority < greatest || priority > least {
            bail!(
                XDAL_ERROR_INVALID_VALUE,
                "priority {priority} is outside the range {greatest} (greatest) to {least} (least)"
            );
        }
        let object = StreamObj::create(backend, device, flags, priority)?;
        let handle = insert_handle(&STREAMS, object, "streams")?;
        out.write(handle as xdal_stream_t);
        Ok(())
    })
}

/// Since 1.1. Writes to `stream` a handle that names `device`'s default
/// stream, the stream that NULL names on a thread whose current device is
/// `device`: the same work queue, ordering and sticky error. It works from
/// any thread whatever its current device, with every function that takes
/// a stream, and asking again gives the same handle value. It cannot be
/// destroyed (`xdal_stream_destroy` returns `XDAL_ERROR_INVALID_VALUE`
/// and the handle keeps working). `XDAL_ERROR_INVALID_DEVICE` for a device
/// out of range, `XDAL_ERROR_NULL_POINTER` for NULL `stream`.
#[no_mangle]
pub extern "C" fn xdal_device_get_default_stream(device: c_int, stream: *mut xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_device_get_default_stream", || {
        let out = Out::new(stream, "stream")?;
        let backend = backend()?;
        let device = backend.device(device)?;
        // Created now, so that a backend failing to create it says so here
        // rather than at the first use of the handle.
        backend.default_stream(device.get())?;
        out.write(default_stream_handle(device));
        Ok(())
    })
}

/// Destroys a stream. Returns at once; work already enqueued still runs to
/// completion. The handle is invalid from now on. NULL (the default
/// stream) cannot be destroyed: `XDAL_ERROR_INVALID_HANDLE`; nor can a
/// handle from `xdal_device_get_default_stream`: `XDAL_ERROR_INVALID_VALUE`
/// (since 1.1), and it stays usable.
#[no_mangle]
pub extern "C" fn xdal_stream_destroy(stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_stream_destroy", || {
        if stream.is_null() {
            bail!(XDAL_ERROR_INVALID_HANDLE, "the default stream (NULL) cannot be destroyed");
        }
        if let Some(object) = STREAMS.get(stream as usize) {
            capture::close(&object, "xdal_stream_destroy of a capturing stream")?;
        }
        if STREAMS.remove(stream as usize).is_some() {
            return Ok(());
        }
        match default_stream_device(backend()?, stream) {
            Some(device) => Err(err!(
                XDAL_ERROR_INVALID_VALUE,
                "{stream:p} is device {device}'s default stream, which cannot be destroyed"
            )),
            None => Err(err!(
                XDAL_ERROR_INVALID_HANDLE,
                "{stream:p} is not a live stream (destroyed, or not a stream handle)"
            )),
        }
    })
}

/// `XDAL_SUCCESS` when all work enqueued on the stream is done,
/// `XDAL_ERROR_NOT_READY` while some is pending (the last operation
/// included), or the stream's sticky error.
#[no_mangle]
pub extern "C" fn xdal_stream_query(stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_stream_query", || {
        let stream = crate::objects::stream(stream)?;
        capture::check_stream_wait(&stream, "xdal_stream_query")?;
        stream.fallback_error()?;
        call!(backend()?, stream_query(stream.native))
    })
}

/// Waits until all work enqueued on the stream so far is done. Returns the
/// stream's sticky error, if its work ever failed.
#[no_mangle]
pub extern "C" fn xdal_stream_synchronize(stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_stream_synchronize", || {
        let stream = crate::objects::stream(stream)?;
        crate::threads::refuse_wait_in_callback("xdal_stream_synchronize")?;
        capture::check_stream_wait(&stream, "xdal_stream_synchronize")?;
        call!(backend()?, stream_synchronize(stream.native))?;
        stream.fallback_error()
    })
}

/// Makes work enqueued on `stream` after this call wait until `event`'s
/// point, as recorded now, is reached. A never-recorded event is no wait.
#[no_mangle]
pub extern "C" fn xdal_stream_wait_event(stream: xdal_stream_t, event: xdal_event_t) -> xdal_status_t {
    boundary(c"xdal_stream_wait_event", || {
        let stream = crate::objects::stream(stream)?;
        let event = crate::objects::event(event)?;
        let backend = backend()?;
        if capture::wait_event(backend, &stream, &event)? {
            return Ok(());
        }
        crate::dispatch::stream::wait_event(backend, &stream, &event)
    })
}

/// Writes the stream's priority.
#[no_mangle]
pub extern "C" fn xdal_stream_get_priority(stream: xdal_stream_t, priority: *mut c_int) -> xdal_status_t {
    boundary(c"xdal_stream_get_priority", || {
        let out = Out::new(priority, "priority")?;
        out.write(crate::objects::stream(stream)?.priority);
        Ok(())
    })
}

/// Writes the device the stream belongs to.
#[no_mangle]
pub extern "C" fn xdal_stream_get_device(stream: xdal_stream_t, device: *mut c_int) -> xdal_status_t {
    boundary(c"xdal_stream_get_device", || {
        let out = Out::new(device, "device")?;
        out.write(crate::objects::stream(stream)?.device.get());
        Ok(())
    })
}

/// Enqueues `fn(user_data)` on the stream: it runs once, after all earlier
/// work of the stream, before any later work. It must not call xdal
/// functions that wait (synchronize, blocking copies, `xdal_free`,
/// destroying a graph that owns memory, `xdal_free_async` on a backend
/// without stream-ordered frees): from inside it they return
/// `XDAL_ERROR_NOT_SUPPORTED` instead of waiting for themselves.
#[no_mangle]
pub extern "C" fn xdal_launch_host_func(
    stream: xdal_stream_t,
    func: xdal_host_fn_t,
    user_data: *mut c_void,
) -> xdal_status_t {
    boundary(c"xdal_launch_host_func", || {
        let Some(func) = func else {
            return require(std::ptr::null::<c_void>(), "fn");
        };
        let stream = crate::objects::stream(stream)?;
        if capture::capturing(&stream) {
            return capture::record_on(&stream, || Op::Host { func, data: user_data as usize });
        }
        let backend = backend()?;
        let info = || Info::new(xdal_activity_kind::XDAL_ACTIVITY_HOST_FUNC, c"host function");
        activity::traced(backend, &stream, info, || {
            crate::dispatch::stream::launch_host_func(backend, &stream, func, user_data)
        })
    })
}
