//! Stream entries.
use super::device::GREATEST_PRIORITY;
use super::{stream_ref, touch, write_out};
use crate::error::{entry, failure};
use crate::event::Event;
use crate::stream::{Op, SendPtr, Stream};
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use xdal_abi::*;

pub(super) unsafe extern "C" fn create(
    device: c_int,
    _flags: u32,
    priority: c_int,
    out: *mut xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        let fake = crate::fake();
        let level = (priority - GREATEST_PRIORITY) as usize;
        let id = fake.next_id.fetch_add(1, Ordering::Relaxed);
        let stream = Arc::new(Stream::new(device as usize, level, id));
        fake.device(device as usize).add_stream(&stream);
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, Arc::into_raw(stream) as xdal_backend_stream_t) }
    })
}

pub(super) unsafe extern "C" fn destroy(stream: xdal_backend_stream_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once; queued work
        // and events hold their own, so pending work still completes.
        let stream = unsafe { Arc::from_raw(stream as *const Stream) };
        stream.mark_destroyed();
        Ok(())
    })
}

pub(super) unsafe extern "C" fn query(stream: xdal_backend_stream_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live handle (the front checks).
        let stream = unsafe { stream_ref(stream) };
        touch(stream.device)?;
        stream.query()
    })
}

pub(super) unsafe extern "C" fn synchronize(stream: xdal_backend_stream_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live handle (the front checks).
        let stream = unsafe { stream_ref(stream) };
        touch(stream.device)?;
        stream.synchronize()
    })
}

pub(super) unsafe extern "C" fn wait_event(
    stream: xdal_backend_stream_t,
    event: xdal_backend_event_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes live handles.
        let (stream, event) = unsafe { (stream_ref(stream), &*(event as *const Event)) };
        touch(stream.device)?;
        // A never-recorded event, or a point already passed, needs no wait.
        if let Some(marker) = event.point().filter(|m| !m.passed()) {
            stream.enqueue(Op::Wait(marker));
        }
        Ok(())
    })
}

pub(super) unsafe extern "C" fn time_next_enqueue(slots: *mut u64) -> xdal_status_raw {
    entry(|| {
        crate::stream::time_next(slots as usize);
        Ok(())
    })
}

pub(super) unsafe extern "C" fn launch_host_func(
    stream: xdal_backend_stream_t,
    func: xdal_host_fn_t,
    user_data: *mut c_void,
) -> xdal_status_raw {
    entry(|| {
        let func = func.ok_or_else(|| failure!(XDAL_ERROR_NULL_POINTER, "host function is NULL"))?;
        // SAFETY: the front passes a live stream handle.
        let stream = unsafe { stream_ref(stream) };
        touch(stream.device)?;
        stream.enqueue(crate::stream::timed(Op::Host { func, data: SendPtr(user_data) }));
        Ok(())
    })
}
