//! Per-thread state: the current device, and whether the thread is inside
//! a caller's callback (which may not wait for stream work).
use crate::error::{bail, XResult};
use std::cell::Cell;
use std::ffi::c_int;

thread_local! {
    static CURRENT_DEVICE: Cell<c_int> = const { Cell::new(0) };
}

/// The calling thread's current device (0 until it sets another).
#[inline]
pub(crate) fn current_device() -> c_int {
    CURRENT_DEVICE.with(Cell::get)
}

pub(crate) fn set_current_device(device: c_int) {
    CURRENT_DEVICE.with(|d| d.set(device));
}

/// Refuses `what`, a call that waits for stream work, on a thread that is
/// running a host function or host kernel for xdal: the stream it runs on
/// cannot move on until it returns, so the wait would never end (CUDA
/// refuses CUDA calls there too). A status and a message instead of a hang.
#[inline]
pub(crate) fn refuse_wait_in_callback(what: &str) -> XResult<()> {
    if xdal_backend_support::callback::in_callback() {
        bail!(
            XDAL_ERROR_NOT_SUPPORTED,
            "{what} was called from inside a host function or host kernel, which must not wait for stream work: \
             the stream running it cannot move on until it returns"
        );
    }
    Ok(())
}
