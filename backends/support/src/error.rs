//! Failures: a status for the front and a message kept per thread for
//! `last_error_message`.
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::sync::Mutex;
use xdal_abi::{xdal_status, xdal_status_raw};

/// A failed backend operation: its status and message, boxed so that a
/// result is one word and stays in a register on every successful call
/// (unboxed, each entry returned 32 bytes through memory and kept a frame
/// for them).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(Box<FailureDetail>);

/// What a [`Failure`] says (its fields, through `Deref`).
#[derive(Debug, Clone, PartialEq)]
pub struct FailureDetail {
    pub status: xdal_status,
    pub message: String,
}

impl Failure {
    #[cold]
    pub fn new(status: xdal_status, message: String) -> Failure {
        Failure(Box::new(FailureDetail { status, message }))
    }

    /// The message, taken.
    pub fn into_message(self) -> String {
        self.0.message
    }
}

impl std::ops::Deref for Failure {
    type Target = FailureDetail;
    fn deref(&self) -> &FailureDetail {
        &self.0
    }
}

impl std::ops::DerefMut for Failure {
    fn deref_mut(&mut self) -> &mut FailureDetail {
        &mut self.0
    }
}

/// The result of a backend operation.
pub type BackendResult<T> = Result<T, Failure>;

/// Builds a [`Failure`] from a status name and a format string:
/// `failure!(XDAL_ERROR_INVALID_VALUE, "size {size} is odd")`.
#[macro_export]
macro_rules! failure {
    ($status:ident, $($fmt:tt)+) => {
        $crate::Failure::new($crate::__abi::xdal_status::$status, format!($($fmt)+))
    };
}

thread_local! {
    static LAST_MESSAGE: RefCell<CString> = RefCell::new(CString::default());
}

/// The last message of a thread whose thread-locals are gone (an entry
/// called from an `atexit` handler or a static destructor, after the C
/// library destroyed the exiting thread's thread-locals): kept here, never
/// a panic, which would abort.
static LAST_MESSAGE_AFTER_EXIT: Mutex<Option<CString>> = Mutex::new(None);

/// Turns a result into the status a table entry returns, keeping the
/// message for `last_error_message` (NOT_READY is an answer, not a failure:
/// it leaves the last message alone).
#[inline]
fn to_status(result: BackendResult<()>) -> xdal_status_raw {
    match result {
        Ok(()) => xdal_status::XDAL_SUCCESS as xdal_status_raw,
        Err(failure) => failed(failure),
    }
}

/// The failure half of `to_status`, out of line: every successful entry
/// stays short.
#[cold]
#[inline(never)]
fn failed(failure: Failure) -> xdal_status_raw {
    if failure.status != xdal_status::XDAL_ERROR_NOT_READY {
        let text = CString::new(failure.message.replace('\0', " ")).unwrap_or_default();
        // `try_with` runs the closure only where the thread-local is there.
        let mut text = Some(text);
        if LAST_MESSAGE.try_with(|m| *m.borrow_mut() = text.take().unwrap_or_default()).is_err() {
            *LAST_MESSAGE_AFTER_EXIT.lock().unwrap_or_else(|p| p.into_inner()) = text;
        }
    }
    failure.status as xdal_status_raw
}

/// The message of this thread's last failed entry; valid until the next
/// failure on this thread (after its thread-locals are gone: until the
/// next failure of any such thread).
pub fn last_message() -> *const c_char {
    LAST_MESSAGE.try_with(|m| m.borrow().as_ptr()).unwrap_or_else(|_| {
        match &*LAST_MESSAGE_AFTER_EXIT.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(message) => message.as_ptr(),
            None => c"".as_ptr(),
        }
    })
}

/// Runs a table entry's body, turning a panic into `XDAL_ERROR_INTERNAL`
/// ("<backend> backend panicked: ...") so that no unwind crosses the C
/// boundary.
#[inline]
pub fn entry(backend: &str, body: impl FnOnce() -> BackendResult<()>) -> xdal_status_raw {
    // `move`: the name is needed only after a panic; captured by value, it
    // is not written to the stack on every call.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(move |panic| {
        Err(failure!(XDAL_ERROR_INTERNAL, "{backend} backend panicked: {}", panic_text(panic.as_ref())))
    });
    to_status(result)
}

/// The text of a caught panic payload.
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: last_message points to this thread's NUL-terminated message.
        unsafe { CStr::from_ptr(last_message()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_failure_is_its_status_and_leaves_its_message() {
        let status = entry("test", || Err(failure!(XDAL_ERROR_INVALID_VALUE, "size {} is odd", 3)));
        assert_eq!(status, xdal_status::XDAL_ERROR_INVALID_VALUE as xdal_status_raw);
        assert_eq!(last(), "size 3 is odd");
        // NOT_READY is an answer: the message of the last failure stays.
        let status = entry("test", || Err(failure!(XDAL_ERROR_NOT_READY, "pending")));
        assert_eq!(status, xdal_status::XDAL_ERROR_NOT_READY as xdal_status_raw);
        assert_eq!(last(), "size 3 is odd");
        assert_eq!(entry("test", || Ok(())), xdal_status::XDAL_SUCCESS as xdal_status_raw);
    }

    #[test]
    fn a_panic_is_internal_and_named() {
        let status = entry("test", || panic!("boom"));
        assert_eq!(status, xdal_status::XDAL_ERROR_INTERNAL as xdal_status_raw);
        assert_eq!(last(), "test backend panicked: boom");
    }
}
