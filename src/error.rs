//! Failure as the front sees it: a status plus a message, the calling
//! thread's last error, and the panic boundary every export runs inside.
use crate::lock::IgnorePoison;
use std::cell::RefCell;
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use xdal_abi::{xdal_status, xdal_status_t};

/// A failed call: what the caller gets back, and why. Boxed: every call
/// passes results along, nearly all of them successes, and a one-word
/// error keeps an `XResult` in registers instead of copying 32 bytes
/// through memory at each `?`.
#[derive(Debug, Clone)]
pub(crate) struct Error(Box<Failure>);

#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub status: xdal_status,
    pub message: String,
}

impl Error {
    #[cold]
    pub fn new(status: xdal_status, message: String) -> Error {
        Error(Box::new(Failure { status, message }))
    }

    /// The same failure under another status.
    pub fn with_status(mut self, status: xdal_status) -> Error {
        self.0.status = status;
        self
    }
}

impl std::ops::Deref for Error {
    type Target = Failure;
    fn deref(&self) -> &Failure {
        &self.0
    }
}

pub(crate) type XResult<T> = Result<T, Error>;

/// Builds an `Error` from a status name and a format string.
macro_rules! err {
    ($status:ident, $($fmt:tt)+) => {
        $crate::error::Error::new(xdal_abi::xdal_status::$status, format!($($fmt)+))
    };
}
pub(crate) use err;

/// Returns early with an `Error`.
macro_rules! bail {
    ($status:ident, $($fmt:tt)+) => {
        return Err($crate::error::err!($status, $($fmt)+))
    };
}
pub(crate) use bail;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The last error of a thread whose thread-local storage is gone: a call
/// made from an `atexit` handler or a static destructor runs after the
/// C library has destroyed the exiting thread's thread-locals, and must
/// still keep its message (and never panic, which would abort).
static LAST_ERROR_AFTER_EXIT: Mutex<String> = Mutex::new(String::new());

/// Records the calling thread's message for its last failed call.
pub(crate) fn set_last_error(function: &str, message: &str) {
    let set = |last: &mut String| {
        last.clear();
        last.push_str(function);
        last.push_str(": ");
        last.push_str(message);
    };
    if LAST_ERROR.try_with(|last| set(&mut last.borrow_mut())).is_err() {
        set(&mut LAST_ERROR_AFTER_EXIT.lock().ignore_poison());
    }
}

/// Runs `f` with the calling thread's last error message.
pub(crate) fn with_last_error<R>(f: impl FnOnce(&str) -> R) -> R {
    // `try_with` runs the closure only where the thread-local is there.
    let mut f = Some(f);
    if let Ok(Some(answer)) = LAST_ERROR.try_with(|last| f.take().map(|f| f(&last.borrow()))) {
        return answer;
    }
    let f = f.expect("not called: the thread-local is gone");
    f(&LAST_ERROR_AFTER_EXIT.lock().ignore_poison())
}

/// The panic boundary: runs an export's body, turns an error into its
/// status and message, and a panic into `XDAL_ERROR_INTERNAL`, so that no
/// unwind ever crosses into C.
#[inline]
pub(crate) fn boundary(function: &'static CStr, body: impl FnOnce() -> XResult<()>) -> xdal_status_t {
    // Watchers (validation, tracing) act before and after the body, out of
    // line and keeping their state in the thread, so that the body stays
    // inlined here with nothing of theirs in its frame.
    if crate::observe::any() {
        entering(function);
    }
    let status = run(function, body);
    if crate::observe::any() {
        leaving(function, status);
    }
    status
}

/// What watchers do as a call starts.
#[cold]
#[inline(never)]
fn entering(function: &'static CStr) {
    let flags = crate::observe::flags();
    if flags & crate::observe::VALIDATE != 0 {
        crate::validate::entering(function.to_str().unwrap_or("xdal"));
    }
    crate::trace::begin(flags & crate::observe::TRACE != 0);
}

/// What watchers do as a call returns (whether or not the watchers changed
/// during the call: `entering` and this pair up).
#[cold]
#[inline(never)]
fn leaving(function: &'static CStr, status: xdal_status_t) {
    crate::trace::end(function, status);
}

#[inline]
fn run(function: &'static CStr, body: impl FnOnce() -> XResult<()>) -> xdal_status_t {
    let function = || function.to_str().unwrap_or("xdal");
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => xdal_status::XDAL_SUCCESS,
        Ok(Err(error)) => {
            if error.status != xdal_status::XDAL_ERROR_NOT_READY {
                set_last_error(function(), &error.message);
            }
            error.status
        }
        Err(panic) => {
            let text = panic_text(&*panic);
            set_last_error(function(), &format!("internal error (caught panic): {text}"));
            xdal_status::XDAL_ERROR_INTERNAL
        }
    }
}

/// The message a panic carried (`panic!` gives a `&str` or a `String`).
fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    let text = panic.downcast_ref::<&str>().copied();
    text.or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("a panic without a message")
}

/// An output pointer the caller passed, checked non-NULL.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `ptr`; NULL is `XDAL_ERROR_NULL_POINTER` naming `what`.
    #[inline]
    pub fn new(ptr: *mut T, what: &str) -> XResult<Out<T>> {
        if ptr.is_null() {
            return Err(null_pointer(what));
        }
        Ok(Out(ptr))
    }

    /// Writes the output; called only once the call has succeeded.
    pub fn write(self, value: T) {
        // SAFETY: non-NULL, checked in `new`; the C caller promises that an
        // output pointer refers to writable storage of its type.
        unsafe { self.0.write(value) }
    }

    pub fn as_ptr(&self) -> *mut T {
        self.0
    }
}

/// Fails with `XDAL_ERROR_NULL_POINTER` naming `what` when `ptr` is NULL.
/// Inlined, with the message built out of line: a launch's check of its
/// argument array was a call of its own.
#[inline]
pub(crate) fn require<T>(ptr: *const T, what: &str) -> XResult<()> {
    if ptr.is_null() {
        return Err(null_pointer(what));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn null_pointer(what: &str) -> Error {
    err!(XDAL_ERROR_NULL_POINTER, "{what} is NULL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_turns_errors_and_panics_into_statuses_and_messages() {
        let status = boundary(c"xdal_test", || Err(err!(XDAL_ERROR_INVALID_VALUE, "size is 0")));
        assert_eq!(status, xdal_status::XDAL_ERROR_INVALID_VALUE);
        assert_eq!(with_last_error(str::to_string), "xdal_test: size is 0");

        let status = boundary(c"xdal_test", || Err(err!(XDAL_ERROR_NOT_READY, "pending")));
        assert_eq!(status, xdal_status::XDAL_ERROR_NOT_READY);
        assert_eq!(with_last_error(str::to_string), "xdal_test: size is 0", "NOT_READY is no failure");

        let status = boundary(c"xdal_test", || panic!("boom"));
        assert_eq!(status, xdal_status::XDAL_ERROR_INTERNAL);
        assert!(with_last_error(|m| m.contains("boom") && m.starts_with("xdal_test: ")));

        assert_eq!(boundary(c"xdal_test", || Ok(())), xdal_status::XDAL_SUCCESS);
    }
}
