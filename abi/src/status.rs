//! Status codes returned by every xdal function.

/// The result of every xdal call. The values never change: a retired value
/// stays reserved and is never given another meaning.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum xdal_status {
    /// The call succeeded.
    XDAL_SUCCESS = 0,
    /// An argument is out of its domain: a size of 0, an unknown flag, kind,
    /// priority or dimension.
    XDAL_ERROR_INVALID_VALUE = 1,
    /// A required pointer argument is NULL.
    XDAL_ERROR_NULL_POINTER = 2,
    /// A device index is out of range (negative, or not below the count).
    XDAL_ERROR_INVALID_DEVICE = 3,
    /// A handle was destroyed, belongs to another object type, or is garbage.
    XDAL_ERROR_INVALID_HANDLE = 4,
    /// A pointer is not a live allocation, is of the wrong kind for the call,
    /// or a range starting at it runs past the end of its allocation.
    XDAL_ERROR_INVALID_POINTER = 5,
    /// The device (or host, for pinned memory) has no room for the request.
    XDAL_ERROR_OUT_OF_MEMORY = 6,
    /// A query found work still pending. Not a failure.
    XDAL_ERROR_NOT_READY = 7,
    /// The backend does not implement this operation.
    XDAL_ERROR_NOT_SUPPORTED = 8,
    /// A module file or kernel name does not exist.
    XDAL_ERROR_NOT_FOUND = 9,
    /// The backend could not load or start; the last error message says why.
    XDAL_ERROR_BACKEND_UNAVAILABLE = 10,
    /// The front and the backend disagree on the ABI major version.
    XDAL_ERROR_VERSION_MISMATCH = 11,
    /// Work run on a stream reported failure. Sticky: every later synchronize
    /// or query of that stream (and of events recorded after the failure on
    /// it) reports it again; other streams are not affected.
    XDAL_ERROR_LAUNCH_FAILED = 12,
    /// The device stopped working.
    XDAL_ERROR_DEVICE_LOST = 13,
    /// A bug in xdal or its backend, including a caught panic.
    XDAL_ERROR_INTERNAL = 14,
    /// The operation is not permitted while a stream is capturing (since
    /// 1.2): a synchronous or querying call on a capturing stream, or one
    /// the capture mode forbids. The capture is invalidated.
    XDAL_ERROR_CAPTURE_UNSUPPORTED = 15,
    /// The capture was broken by an illegal operation, or ended with a
    /// stream it forked not joined back (since 1.2).
    XDAL_ERROR_CAPTURE_INVALIDATED = 16,
}

/// The status type that every xdal function returns.
pub type xdal_status_t = xdal_status;

/// A status as it crosses the ABI from C: any `int` value, which the Rust
/// side must not assume to be a valid `xdal_status`. The headers spell it
/// `xdal_status_t` (cbindgen renames it), so C sees one type.
pub type xdal_status_raw = i32;

impl xdal_status {
    /// Every status, in value order. (Rust only.)
    ///
    /// cbindgen:ignore
    pub const ALL: [xdal_status; 17] = [
        xdal_status::XDAL_SUCCESS,
        xdal_status::XDAL_ERROR_INVALID_VALUE,
        xdal_status::XDAL_ERROR_NULL_POINTER,
        xdal_status::XDAL_ERROR_INVALID_DEVICE,
        xdal_status::XDAL_ERROR_INVALID_HANDLE,
        xdal_status::XDAL_ERROR_INVALID_POINTER,
        xdal_status::XDAL_ERROR_OUT_OF_MEMORY,
        xdal_status::XDAL_ERROR_NOT_READY,
        xdal_status::XDAL_ERROR_NOT_SUPPORTED,
        xdal_status::XDAL_ERROR_NOT_FOUND,
        xdal_status::XDAL_ERROR_BACKEND_UNAVAILABLE,
        xdal_status::XDAL_ERROR_VERSION_MISMATCH,
        xdal_status::XDAL_ERROR_LAUNCH_FAILED,
        xdal_status::XDAL_ERROR_DEVICE_LOST,
        xdal_status::XDAL_ERROR_INTERNAL,
        xdal_status::XDAL_ERROR_CAPTURE_UNSUPPORTED,
        xdal_status::XDAL_ERROR_CAPTURE_INVALIDATED,
    ];

    /// The status with raw value `raw`, if there is one.
    pub fn from_raw(raw: xdal_status_raw) -> Option<xdal_status> {
        usize::try_from(raw).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// The C name of the status, e.g. `"XDAL_ERROR_INVALID_VALUE"`.
    pub fn name(self) -> &'static str {
        match self {
            xdal_status::XDAL_SUCCESS => "XDAL_SUCCESS",
            xdal_status::XDAL_ERROR_INVALID_VALUE => "XDAL_ERROR_INVALID_VALUE",
            xdal_status::XDAL_ERROR_NULL_POINTER => "XDAL_ERROR_NULL_POINTER",
            xdal_status::XDAL_ERROR_INVALID_DEVICE => "XDAL_ERROR_INVALID_DEVICE",
            xdal_status::XDAL_ERROR_INVALID_HANDLE => "XDAL_ERROR_INVALID_HANDLE",
            xdal_status::XDAL_ERROR_INVALID_POINTER => "XDAL_ERROR_INVALID_POINTER",
            xdal_status::XDAL_ERROR_OUT_OF_MEMORY => "XDAL_ERROR_OUT_OF_MEMORY",
            xdal_status::XDAL_ERROR_NOT_READY => "XDAL_ERROR_NOT_READY",
            xdal_status::XDAL_ERROR_NOT_SUPPORTED => "XDAL_ERROR_NOT_SUPPORTED",
            xdal_status::XDAL_ERROR_NOT_FOUND => "XDAL_ERROR_NOT_FOUND",
            xdal_status::XDAL_ERROR_BACKEND_UNAVAILABLE => "XDAL_ERROR_BACKEND_UNAVAILABLE",
            xdal_status::XDAL_ERROR_VERSION_MISMATCH => "XDAL_ERROR_VERSION_MISMATCH",
            xdal_status::XDAL_ERROR_LAUNCH_FAILED => "XDAL_ERROR_LAUNCH_FAILED",
            xdal_status::XDAL_ERROR_DEVICE_LOST => "XDAL_ERROR_DEVICE_LOST",
            xdal_status::XDAL_ERROR_INTERNAL => "XDAL_ERROR_INTERNAL",
            xdal_status::XDAL_ERROR_CAPTURE_UNSUPPORTED => "XDAL_ERROR_CAPTURE_UNSUPPORTED",
            xdal_status::XDAL_ERROR_CAPTURE_INVALIDATED => "XDAL_ERROR_CAPTURE_INVALIDATED",
        }
    }
}
