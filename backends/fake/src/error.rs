//! How the fake backend reports failure: a status for the front, and a
//! per-thread message the front fetches through the table.
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use xdal_abi::{xdal_status, xdal_status_raw};

/// A failed backend operation.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub status: xdal_status,
    pub message: String,
}

pub(crate) type FakeResult<T> = Result<T, Failure>;

/// Builds a `Failure` from a status and a format string.
macro_rules! failure {
    ($status:ident, $($fmt:tt)+) => {
        $crate::error::Failure { status: xdal_abi::xdal_status::$status, message: format!($($fmt)+) }
    };
}
pub(crate) use failure;

thread_local! {
    static LAST_MESSAGE: RefCell<CString> = RefCell::new(CString::default());
}

/// Turns a result into the status a table entry returns, keeping the
/// message for `last_error_message`.
pub(crate) fn to_status(result: FakeResult<()>) -> xdal_status_raw {
    match result {
        Ok(()) => xdal_status::XDAL_SUCCESS as xdal_status_raw,
        Err(failure) => {
            if failure.status != xdal_status::XDAL_ERROR_NOT_READY {
                let text = CString::new(failure.message.replace('\0', " ")).unwrap_or_default();
                LAST_MESSAGE.with(|m| *m.borrow_mut() = text);
            }
            failure.status as xdal_status_raw
        }
    }
}

/// The message of this thread's last failed entry; valid until the next
/// failure on this thread.
pub(crate) fn last_message() -> *const c_char {
    LAST_MESSAGE.with(|m| m.borrow().as_ptr())
}

/// Runs a table entry's body, turning a panic into `XDAL_ERROR_INTERNAL`
/// so that no unwind crosses the C boundary.
pub(crate) fn entry(body: impl FnOnce() -> FakeResult<()>) -> xdal_status_raw {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|panic| Err(failure!(XDAL_ERROR_INTERNAL, "fake backend panicked: {}", panic_text(&panic))));
    to_status(result)
}

/// The text of a caught panic payload.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
