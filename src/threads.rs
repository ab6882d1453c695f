//! Per-thread state: the current device.
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
