//! How the OpenCL backend reports failure: a status for the front, and a
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

pub(crate) type ClResult<T> = Result<T, Failure>;

/// Builds a `Failure` from a status and a format string.
macro_rules! failure {
    ($status:ident, $($fmt:tt)+) => {
        $crate::error::Failure { status: xdal_abi::xdal_status::$status, message: format!($($fmt)+) }
    };
}
pub(crate) use failure;

/// An OpenCL call's error code as a failure of `what`: out of resources as
/// `XDAL_ERROR_OUT_OF_MEMORY`, everything else as the runtime's error.
pub(crate) fn cl_failure(what: &str, code: i32) -> Failure {
    let status = match code {
        cl3::error_codes::CL_OUT_OF_RESOURCES
        | cl3::error_codes::CL_OUT_OF_HOST_MEMORY
        | cl3::error_codes::CL_MEM_OBJECT_ALLOCATION_FAILURE => xdal_status::XDAL_ERROR_OUT_OF_MEMORY,
        _ => xdal_status::XDAL_ERROR_LAUNCH_FAILED,
    };
    Failure { status, message: format!("{what}: OpenCL error {code} ({})", cl3::error_codes::error_text(code)) }
}

/// `result`'s error as a failure of `what`.
pub(crate) trait ClCall<T> {
    fn cl(self, what: &str) -> ClResult<T>;
}

impl<T> ClCall<T> for Result<T, i32> {
    fn cl(self, what: &str) -> ClResult<T> {
        self.map_err(|code| cl_failure(what, code))
    }
}

thread_local! {
    static LAST_MESSAGE: RefCell<CString> = RefCell::new(CString::default());
}

/// Turns a result into the status a table entry returns, keeping the
/// message for `last_error_message`.
fn to_status(result: ClResult<()>) -> xdal_status_raw {
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
pub(crate) fn entry(body: impl FnOnce() -> ClResult<()>) -> xdal_status_raw {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let text = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(failure!(XDAL_ERROR_INTERNAL, "OpenCL backend panicked: {text}"))
    });
    to_status(result)
}
