//! The enqueue calls of the stream paths, straight through cl3's table of
//! the runtime's entry points. cl3's own wrappers always ask the runtime
//! for the command's event; these take the event pointer as OpenCL does
//! (NULL: none), so that a command nothing waits for costs no event: no
//! reference taken at the enqueue and none to give back after it, which on
//! PoCL is a tenth of a small command's cost on the calling thread.
use cl3::error_codes::{DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED};
use cl3::types::{cl_command_queue, cl_event, cl_kernel};
use std::ffi::c_void;
use std::ptr::null;

/// The runtime's entry points (loaded by the time any stream exists).
fn api() -> Result<&'static cl3::OpenCl, i32> {
    cl3::load_library().as_ref().map(|runtime| &**runtime).map_err(|_| DLOPEN_RUNTIME_LOAD_FAILED)
}

/// An entry point's result: None when the runtime lacks the entry.
fn status(code: Option<i32>) -> Result<(), i32> {
    match code {
        Some(0) => Ok(()),
        Some(code) => Err(code),
        None => Err(DLOPEN_FUNCTION_NOT_AVAILABLE),
    }
}

/// Enqueues a fill of `bytes` bytes at `dst` with the byte `value`.
///
/// # Safety
/// `[dst, dst + bytes)` must be SVM memory of the queue's context that
/// stays allocated until the fill has run; `event` is NULL or writable.
pub(crate) unsafe fn fill(
    queue: cl_command_queue,
    dst: *mut c_void,
    value: u8,
    bytes: usize,
    event: *mut cl_event,
) -> Result<(), i32> {
    // OpenCL copies the one-byte pattern at the call.
    let pattern = (&value as *const u8).cast();
    status(api()?.clEnqueueSVMMemFill(queue, dst, pattern, 1, bytes, 0, null(), event))
}

/// Enqueues a copy of `bytes` bytes from `src` to `dst`, without waiting.
///
/// # Safety
/// Both ranges must be SVM or host memory that stays valid until the copy
/// has run, and must not overlap; `event` is NULL or writable.
pub(crate) unsafe fn copy(
    queue: cl_command_queue,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    event: *mut cl_event,
) -> Result<(), i32> {
    status(api()?.clEnqueueSVMMemcpy(queue, 0, dst, src, bytes, 0, null(), event))
}

/// Enqueues `kernel` over `global` work items (one entry per dimension) in
/// work-groups of `local` (NULL: the runtime's choice).
///
/// # Safety
/// A live queue and kernel with every argument set; `local` is NULL or
/// holds `global.len()` entries; `event` is NULL or writable.
pub(crate) unsafe fn kernel(
    queue: cl_command_queue,
    kernel: cl_kernel,
    global: &[usize],
    local: *const usize,
    event: *mut cl_event,
) -> Result<(), i32> {
    let dims = global.len() as u32;
    status(api()?.clEnqueueNDRangeKernel(queue, kernel, dims, null(), global.as_ptr(), local, 0, null(), event))
}

/// Enqueues a marker: a command that completes when everything before it
/// in the queue has.
///
/// # Safety
/// A live queue; `event` is NULL or writable.
pub(crate) unsafe fn marker(queue: cl_command_queue, event: *mut cl_event) -> Result<(), i32> {
    status(api()?.clEnqueueMarkerWithWaitList(queue, 0, null(), event))
}

/// Enqueues a barrier: later commands wait for `waits` too.
///
/// # Safety
/// A live queue; `waits` holds live events; `event` is NULL or writable.
pub(crate) unsafe fn barrier(queue: cl_command_queue, waits: &[cl_event], event: *mut cl_event) -> Result<(), i32> {
    status(api()?.clEnqueueBarrierWithWaitList(queue, waits.len() as u32, waits.as_ptr(), event))
}
