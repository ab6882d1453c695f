//! Versions, status names, the last error message, initialisation.
use crate::backend::backend;
use crate::error::{boundary, set_last_error, with_last_error, Out};
use std::ffi::{c_char, CStr};
use std::panic::catch_unwind;
use xdal_abi::*;

/// Writes the library's version (1.2.0 for this release). All three outputs
/// are required.
#[no_mangle]
pub extern "C" fn xdal_get_version(major: *mut u32, minor: *mut u32, patch: *mut u32) -> xdal_status_t {
    boundary(c"xdal_get_version", || {
        let (major, minor, patch) = (Out::new(major, "major")?, Out::new(minor, "minor")?, Out::new(patch, "patch")?);
        major.write(XDAL_VERSION_MAJOR);
        minor.write(XDAL_VERSION_MINOR);
        patch.write(XDAL_VERSION_PATCH);
        Ok(())
    })
}

fn status_cstr(status: xdal_status_raw) -> &'static CStr {
    let Some(status) = xdal_status::from_raw(status) else {
        return c"XDAL_UNKNOWN_STATUS";
    };
    match status {
        xdal_status::XDAL_SUCCESS => c"XDAL_SUCCESS",
        xdal_status::XDAL_ERROR_INVALID_VALUE => c"XDAL_ERROR_INVALID_VALUE",
        xdal_status::XDAL_ERROR_NULL_POINTER => c"XDAL_ERROR_NULL_POINTER",
        xdal_status::XDAL_ERROR_INVALID_DEVICE => c"XDAL_ERROR_INVALID_DEVICE",
        xdal_status::XDAL_ERROR_INVALID_HANDLE => c"XDAL_ERROR_INVALID_HANDLE",
        xdal_status::XDAL_ERROR_INVALID_POINTER => c"XDAL_ERROR_INVALID_POINTER",
        xdal_status::XDAL_ERROR_OUT_OF_MEMORY => c"XDAL_ERROR_OUT_OF_MEMORY",
        xdal_status::XDAL_ERROR_NOT_READY => c"XDAL_ERROR_NOT_READY",
        xdal_status::XDAL_ERROR_NOT_SUPPORTED => c"XDAL_ERROR_NOT_SUPPORTED",
        xdal_status::XDAL_ERROR_NOT_FOUND => c"XDAL_ERROR_NOT_FOUND",
        xdal_status::XDAL_ERROR_BACKEND_UNAVAILABLE => c"XDAL_ERROR_BACKEND_UNAVAILABLE",
        xdal_status::XDAL_ERROR_VERSION_MISMATCH => c"XDAL_ERROR_VERSION_MISMATCH",
        xdal_status::XDAL_ERROR_LAUNCH_FAILED => c"XDAL_ERROR_LAUNCH_FAILED",
        xdal_status::XDAL_ERROR_DEVICE_LOST => c"XDAL_ERROR_DEVICE_LOST",
        xdal_status::XDAL_ERROR_INTERNAL => c"XDAL_ERROR_INTERNAL",
        xdal_status::XDAL_ERROR_CAPTURE_UNSUPPORTED => c"XDAL_ERROR_CAPTURE_UNSUPPORTED",
        xdal_status::XDAL_ERROR_CAPTURE_INVALIDATED => c"XDAL_ERROR_CAPTURE_INVALIDATED",
    }
}

/// The C name of a status code, e.g. "XDAL_ERROR_INVALID_VALUE";
/// "XDAL_UNKNOWN_STATUS" for a value outside the enum. Never NULL; the
/// string is static.
#[no_mangle]
pub extern "C" fn xdal_status_string(status: xdal_status_raw) -> *const c_char {
    status_cstr(status).as_ptr()
}

/// Copies the calling thread's message for its last failed call into
/// `buf` ("" if no call failed yet). `*needed` (optional) gets the message
/// length including the NUL. A message longer than `len - 1` is cut, and
/// still NUL-terminated. `buf` may be NULL when `len` is 0.
#[no_mangle]
pub extern "C" fn xdal_get_last_error_message(buf: *mut c_char, len: usize, needed: *mut usize) -> xdal_status_t {
    // Not through `boundary`: reading the message must not copy or touch
    // it on success; only this call's own failure replaces it.
    let outcome = catch_unwind(|| {
        if buf.is_null() && len > 0 {
            set_last_error("xdal_get_last_error_message", &format!("buf is NULL but len is {len}"));
            return xdal_status::XDAL_ERROR_NULL_POINTER;
        }
        with_last_error(|message| {
            let bytes = message.as_bytes();
            if len > 0 {
                let copied = bytes.len().min(len - 1);
                // SAFETY: buf is non-NULL and the caller provides `len`
                // writable bytes; we write `copied + 1 <= len` of them.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, copied);
                    *buf.add(copied) = 0;
                }
            }
            if !needed.is_null() {
                // SAFETY: non-NULL; an output pointer of the caller's.
                unsafe { *needed = bytes.len() + 1 };
            }
        });
        xdal_status::XDAL_SUCCESS
    });
    outcome.unwrap_or(xdal_status::XDAL_ERROR_INTERNAL)
}

/// Loads and starts the backend now rather than at the first call.
/// `XDAL_ERROR_BACKEND_UNAVAILABLE` (or `XDAL_ERROR_VERSION_MISMATCH`) when
/// it cannot start; the last error message says why.
#[no_mangle]
pub extern "C" fn xdal_init() -> xdal_status_t {
    boundary(c"xdal_init", || backend().map(|_| ()))
}

/// The name of the backend in use: "fake", "cuda", a plugin's own name, or
/// "none" when no backend could start. Never NULL.
#[no_mangle]
pub extern "C" fn xdal_backend_name() -> *const c_char {
    // Loads the backend if need be; then names the one that started, which
    // a fork child (refused by `backend()`) still names.
    catch_unwind(|| {
        let _ = backend();
        crate::backend::started_backend().map_or(c"none".as_ptr(), |b| b.name.as_ptr())
    })
    .unwrap_or(c"none".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_c_name() {
        for status in xdal_status::ALL {
            assert_eq!(status_cstr(status as xdal_status_raw).to_str().unwrap(), status.name());
        }
        assert_eq!(status_cstr(99).to_str().unwrap(), "XDAL_UNKNOWN_STATUS");
        assert_eq!(status_cstr(-1).to_str().unwrap(), "XDAL_UNKNOWN_STATUS");
    }
}
