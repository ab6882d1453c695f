//! Opaque handle types. A handle is a token, not a pointer the caller may
//! follow: the library validates it on every call, so a destroyed, foreign
//! or garbage handle is reported instead of dereferenced.

/// The object behind an `xdal_stream_t`. Never defined: only pointed to.
pub struct xdal_stream_s {
    _opaque: [u8; 0],
}
/// A stream: an in-order queue of work on one device. NULL names the calling
/// thread's current device's default stream; since 1.1,
/// `xdal_device_get_default_stream` gives a handle for a given device's.
pub type xdal_stream_t = *mut xdal_stream_s;

/// The object behind an `xdal_event_t`. Never defined: only pointed to.
pub struct xdal_event_s {
    _opaque: [u8; 0],
}
/// An event: a point in a stream's work, with a timestamp when timing is on.
pub type xdal_event_t = *mut xdal_event_s;

/// A host function enqueued on a stream by `xdal_launch_host_func`. It runs
/// once, on a library thread or on a thread that synchronizes the stream,
/// after all earlier work of the stream, and must not call xdal functions
/// that wait for work (synchronize, blocking copies): called from inside
/// it, they return `XDAL_ERROR_NOT_SUPPORTED`. It must return: an exception
/// that leaves it aborts the process.
pub type xdal_host_fn_t = Option<unsafe extern "C" fn(user_data: *mut core::ffi::c_void)>;
