//! Stream operations: the backend's entry, or, for work the backend cannot
//! enqueue itself, a host function on the stream doing it, so that it keeps
//! its place in stream order.
use crate::backend::{call, call_or, Backend};
use crate::error::XResult;
use crate::lock::IgnorePoison;
use crate::objects::{EventObj, StreamObj};
use std::ffi::c_void;
use std::sync::{Arc, Weak};
use xdal_abi::*;

type Work = Box<dyn FnOnce() -> XResult<()> + Send>;

struct Queued {
    work: Work,
    /// Where a failure goes: the stream's sticky error, if it still exists.
    stream: Weak<StreamObj>,
}

unsafe extern "C" fn run_queued(data: *mut c_void) {
    // SAFETY: `data` is the Box leaked by `enqueue`, run exactly once.
    let queued = unsafe { Box::from_raw(data as *mut Queued) };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(queued.work))
        .unwrap_or_else(|_| Err(crate::error::err!(XDAL_ERROR_INTERNAL, "queued fallback work panicked")));
    if let (Err(error), Some(stream)) = (result, queued.stream.upgrade()) {
        let mut slot = stream.fallback_error.lock().ignore_poison();
        slot.get_or_insert(error.with_status(xdal_status::XDAL_ERROR_LAUNCH_FAILED));
    }
}

/// Enqueues `work` on `stream` through the backend's `launch_host_func`.
pub(crate) fn enqueue(backend: &'static Backend, stream: &Arc<StreamObj>, work: Work) -> XResult<()> {
    let data = Box::into_raw(Box::new(Queued { work, stream: Arc::downgrade(stream) }));
    let result = call!(backend, launch_host_func(stream.native, Some(run_queued), data as *mut c_void));
    if result.is_err() {
        // SAFETY: the backend refused the function, so it will never run:
        // the Box is still ours.
        drop(unsafe { Box::from_raw(data) });
    }
    result
}

/// Enqueues the caller's host function, so that whichever thread runs it
/// (a worker, a helping synchronizer, or the enqueuing thread itself on a
/// synchronous backend) is marked as running a callback and a waiting xdal
/// call from inside it is refused instead of waiting for itself. A
/// built-in backend that marks the thread itself gets the function as it
/// is; any other runs it inside a trampoline that marks (the queued-work
/// path: two allocations, which halved the empty host function's rate).
#[inline]
pub(crate) fn launch_host_func(
    backend: &'static Backend,
    stream: &Arc<StreamObj>,
    func: unsafe extern "C" fn(*mut c_void),
    user_data: *mut c_void,
) -> XResult<()> {
    if backend.marks_host_functions {
        return call!(backend, launch_host_func(stream.native, Some(func), user_data));
    }
    let data = SendPtr(user_data);
    let call = move || {
        let data = data;
        // SAFETY: the caller gave the function and its argument to be run
        // once, in stream order; this is that run.
        xdal_backend_support::callback::run_callback(|| unsafe { func(data.0) });
        Ok(())
    };
    enqueue(backend, stream, Box::new(call))
}

/// A pointer moved into queued work; validity is the caller's contract.
struct SendPtr(*mut c_void);
// SAFETY: a plain address, used only by the queued copy it was checked for.
unsafe impl Send for SendPtr {}

/// Enqueues a copy. Fallback: a host function doing the synchronous copy.
/// Inlined: it is the hot path of `xdal_memcpy_async` (graph replay calls
/// it too, which would otherwise keep it out of line).
#[inline(always)]
pub(crate) fn copy_async(
    backend: &'static Backend,
    stream: &Arc<StreamObj>,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: xdal_memcpy_kind,
) -> XResult<()> {
    call_or!(backend, mem_copy_async(dst, src, bytes, kind, stream.native), {
        let (dst, src) = (SendPtr(dst), SendPtr(src as *mut c_void));
        let copy = move || {
            let (dst, src) = (dst, src);
            call!(backend, mem_copy(dst.0, src.0, bytes, kind))
        };
        enqueue(backend, stream, Box::new(copy))
    })
}

/// Enqueues a set. Fallback: a host function doing the synchronous set.
#[inline(always)]
pub(crate) fn set_async(
    backend: &'static Backend,
    stream: &Arc<StreamObj>,
    dst: *mut c_void,
    value: std::ffi::c_int,
    bytes: usize,
) -> XResult<()> {
    call_or!(backend, mem_set_async(dst, value, bytes, stream.native), {
        let dst = SendPtr(dst);
        let set = move || {
            let dst = dst;
            crate::dispatch::memory::set(backend, dst.0, value, bytes)
        };
        enqueue(backend, stream, Box::new(set))
    })
}

/// Makes the stream wait for an event. Fallback: wait on the host now.
pub(crate) fn wait_event(backend: &'static Backend, stream: &StreamObj, event: &EventObj) -> XResult<()> {
    call_or!(backend, stream_wait_event(stream.native, event.native), call!(backend, event_synchronize(event.native)))
}
