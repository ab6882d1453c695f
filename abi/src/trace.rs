//! Tracing and profiling (since 1.2): API records of every call, activity
//! records of the work the calls enqueued, with start and end times of the
//! work itself on one clock, tied together by correlation ids.
use crate::{xdal_dim3_t, xdal_memcpy_kind_t, xdal_status_t};
use core::ffi::{c_char, c_int, c_void};

/// The object behind an `xdal_tracer_t`. Never defined: only pointed to.
pub struct xdal_tracer_s {
    _opaque: [u8; 0],
}
/// A tracer (since 1.2): a pair of callbacks that receive API and activity
/// records from `xdal_tracer_create` until `xdal_tracer_destroy`.
pub type xdal_tracer_t = *mut xdal_tracer_s;

/// What an activity record describes (since 1.2).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum xdal_activity_kind {
    /// A kernel launch: `name` is the kernel's, `grid` and `block` its shape.
    XDAL_ACTIVITY_KERNEL = 0,
    /// A copy: `bytes` and `copy_kind`; `name` e.g. "memcpy HtoD".
    XDAL_ACTIVITY_MEMCPY = 1,
    /// A set: `bytes`.
    XDAL_ACTIVITY_MEMSET = 2,
    /// A host function run in stream order.
    XDAL_ACTIVITY_HOST_FUNC = 3,
    /// One launch of a graph, all its nodes.
    XDAL_ACTIVITY_GRAPH = 4,
    /// A device allocation (`xdal_malloc`, `xdal_malloc_async`): `bytes`.
    XDAL_ACTIVITY_ALLOC = 5,
    /// A device free (`xdal_free`, `xdal_free_async`): `bytes`.
    XDAL_ACTIVITY_FREE = 6,
}
/// See `enum xdal_activity_kind`.
pub type xdal_activity_kind_t = xdal_activity_kind;

/// One piece of device work, delivered after it completed (since 1.2).
/// Extensible: `struct_size` is the size the library filled in.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xdal_activity {
    /// Size of this struct as the library knows it.
    pub struct_size: usize,
    /// What the work was.
    pub kind: xdal_activity_kind_t,
    /// The device it ran on.
    pub device: c_int,
    /// The stream it ran on: stable per stream, never 0.
    pub stream_id: u64,
    /// The API call that enqueued it (`xdal_api_record_t`'s id).
    pub correlation_id: u64,
    /// When the work started, on `xdal_get_timestamp_ns`'s clock.
    pub start_ns: u64,
    /// When it ended, same clock.
    pub end_ns: u64,
    /// The kernel's name, or e.g. "memcpy HtoD"; valid during the callback.
    pub name: *const c_char,
    /// Bytes copied, set, allocated or freed; 0 otherwise.
    pub bytes: u64,
    /// For a copy, its direction.
    pub copy_kind: xdal_memcpy_kind_t,
    /// For a kernel, its grid.
    pub grid: xdal_dim3_t,
    /// For a kernel, its block.
    pub block: xdal_dim3_t,
}
/// See `struct xdal_activity`.
pub type xdal_activity_t = xdal_activity;

/// One xdal call, delivered after it returned (since 1.2). Extensible.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xdal_api_record {
    /// Size of this struct as the library knows it.
    pub struct_size: usize,
    /// The function's name, e.g. "xdal_memcpy_async" (static).
    pub function: *const c_char,
    /// Unique in the process; activities of work this call enqueued carry it.
    pub correlation_id: u64,
    /// The top of the calling thread's `xdal_correlation_push_external`
    /// stack; 0 when it is empty.
    pub external_id: u64,
    /// When the call started, on `xdal_get_timestamp_ns`'s clock.
    pub start_ns: u64,
    /// When it returned, same clock.
    pub end_ns: u64,
    /// The calling thread (the operating system's thread id).
    pub thread_id: u64,
    /// What the call returned.
    pub status: xdal_status_t,
}
/// See `struct xdal_api_record`.
pub type xdal_api_record_t = xdal_api_record;

/// Receives an API record; may run on any thread, must not call xdal
/// functions that wait.
pub type xdal_api_callback_t = Option<unsafe extern "C" fn(user_data: *mut c_void, record: *const xdal_api_record_t)>;

/// Receives `count` activity records; may run on any thread, must not call
/// xdal functions that wait. The records are valid during the call only.
pub type xdal_activity_callback_t =
    Option<unsafe extern "C" fn(user_data: *mut c_void, records: *const xdal_activity_t, count: usize)>;

/// What `xdal_tracer_create` takes (since 1.2). Extensible: set
/// `struct_size` to `sizeof(xdal_tracer_desc_t)`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xdal_tracer_desc {
    /// Size of this struct as the caller knows it; set by the caller.
    pub struct_size: usize,
    /// Called once per xdal call; may be NULL.
    pub api: xdal_api_callback_t,
    /// Called with completed activities; may be NULL.
    pub activity: xdal_activity_callback_t,
    /// Passed to both callbacks.
    pub user_data: *mut c_void,
    /// Bit `1 << kind` for each `xdal_activity_kind_t` wanted; 0 means all.
    pub activity_mask: u64,
}
/// See `struct xdal_tracer_desc`.
pub type xdal_tracer_desc_t = xdal_tracer_desc;
