//! The backend table: what a backend implements, and the getter it exports.
//!
//! Every entry receives arguments the front has already checked: device
//! indices are in range, required pointers are non-NULL, sizes are non-zero,
//! flags and priorities are valid, handles are live backend handles, and
//! device ranges lie inside live allocations. Backends do not re-validate.
//! Entries are only ever appended; a NULL entry means "not implemented".
use crate::{
    xdal_device_properties_t, xdal_dim3_t, xdal_host_fn_t, xdal_host_kernel_t, xdal_kernel_arg_t, xdal_mem_stats_t,
    xdal_memcpy_kind_t, xdal_status_raw,
};
use core::ffi::{c_char, c_int, c_void};

/// The object behind a backend's native stream handle; defined by the backend.
pub struct xdal_backend_stream_s {
    _opaque: [u8; 0],
}
/// A backend's native stream. The front maps each `xdal_stream_t` to one.
pub type xdal_backend_stream_t = *mut xdal_backend_stream_s;

/// The object behind a backend's native event handle; defined by the backend.
pub struct xdal_backend_event_s {
    _opaque: [u8; 0],
}
/// A backend's native event. The front maps each `xdal_event_t` to one.
pub type xdal_backend_event_t = *mut xdal_backend_event_s;

/// The object behind a backend's native module handle; defined by the backend.
pub struct xdal_backend_module_s {
    _opaque: [u8; 0],
}
/// A backend's native module. The front maps each `xdal_module_t` to one.
pub type xdal_backend_module_t = *mut xdal_backend_module_s;

/// The object behind a backend's native function handle; defined by the backend.
pub struct xdal_backend_function_s {
    _opaque: [u8; 0],
}
/// A backend's native kernel. The front maps each `xdal_function_t` to one.
pub type xdal_backend_function_t = *mut xdal_backend_function_s;

/// Version 1 of the backend table. A backend fills one and returns it from
/// its getter; it must stay valid and unchanged for the life of the process.
/// Statuses returned by entries cross as plain `xdal_status_t` values; any
/// value outside the enum is reported to the caller as
/// `XDAL_ERROR_INTERNAL`.
#[repr(C)]
pub struct xdal_backend_v1 {
    /// `sizeof(xdal_backend_v1_t)` as the backend was compiled: entries
    /// beyond it are treated as NULL by the front.
    pub struct_size: usize,
    /// ABI major the backend implements; must equal the front's.
    pub abi_major: u32,
    /// ABI minor the backend implements; any value is accepted.
    pub abi_minor: u32,
    /// NUL-terminated backend name, e.g. "fake" or "cuda". Required.
    pub name: *const c_char,

    /// Required. Writes the number of devices.
    pub device_get_count: Option<unsafe extern "C" fn(count: *mut c_int) -> xdal_status_raw>,
    /// Required. Fills `props` up to `props->struct_size` (already set by the
    /// front to its own size).
    pub device_get_properties:
        Option<unsafe extern "C" fn(device: c_int, props: *mut xdal_device_properties_t) -> xdal_status_raw>,
    /// Waits for all work of all streams of `device`. Fallback: the front
    /// synchronizes every stream it created on the device.
    pub device_synchronize: Option<unsafe extern "C" fn(device: c_int) -> xdal_status_raw>,
    /// Writes the priority range; numerically lower is more urgent.
    /// Fallback: a single level, 0.
    pub device_get_stream_priority_range:
        Option<unsafe extern "C" fn(device: c_int, least: *mut c_int, greatest: *mut c_int) -> xdal_status_raw>,
    /// Writes 1 if `device` can address `peer`'s memory directly. Fallback: 0.
    pub device_can_access_peer:
        Option<unsafe extern "C" fn(device: c_int, peer: c_int, can_access: *mut c_int) -> xdal_status_raw>,
    /// Writes free and total bytes of `device`. Fallback: total from the
    /// properties, free as total minus what the front saw allocated.
    pub mem_get_info:
        Option<unsafe extern "C" fn(device: c_int, free_bytes: *mut usize, total_bytes: *mut usize) -> xdal_status_raw>,

    /// Required. Allocates `size` (> 0) bytes on `device`.
    pub mem_alloc: Option<unsafe extern "C" fn(device: c_int, size: usize, ptr: *mut *mut c_void) -> xdal_status_raw>,
    /// Required. Frees a live allocation base of `device`. The front has
    /// already waited for the device's pending work.
    pub mem_free: Option<unsafe extern "C" fn(device: c_int, ptr: *mut c_void) -> xdal_status_raw>,
    /// Allocates pinned host memory. Fallback: page-aligned host memory.
    pub mem_alloc_host: Option<unsafe extern "C" fn(size: usize, ptr: *mut *mut c_void) -> xdal_status_raw>,
    /// Frees memory from `mem_alloc_host`. Required when `mem_alloc_host` is set.
    pub mem_free_host: Option<unsafe extern "C" fn(ptr: *mut c_void) -> xdal_status_raw>,
    /// Stream-ordered allocation. Fallback: ordered plain `mem_alloc`.
    pub mem_alloc_async: Option<
        unsafe extern "C" fn(
            device: c_int,
            size: usize,
            stream: xdal_backend_stream_t,
            ptr: *mut *mut c_void,
        ) -> xdal_status_raw,
    >,
    /// Stream-ordered free of a `mem_alloc_async` block. Required when
    /// `mem_alloc_async` is set.
    pub mem_free_async:
        Option<unsafe extern "C" fn(device: c_int, ptr: *mut c_void, stream: xdal_backend_stream_t) -> xdal_status_raw>,
    /// Required. Synchronous copy; `kind` is never DEFAULT. The front has
    /// already waited for the current device's default stream. Overlapping
    /// ranges must get memmove's result, whatever the runtime's own copy
    /// does with them.
    pub mem_copy: Option<
        unsafe extern "C" fn(
            dst: *mut c_void,
            src: *const c_void,
            bytes: usize,
            kind: xdal_memcpy_kind_t,
        ) -> xdal_status_raw,
    >,
    /// Copy enqueued on `stream`; `kind` is never DEFAULT; overlapping
    /// ranges get memmove's result. Fallback: a host function on the stream
    /// calling `mem_copy`.
    pub mem_copy_async: Option<
        unsafe extern "C" fn(
            dst: *mut c_void,
            src: *const c_void,
            bytes: usize,
            kind: xdal_memcpy_kind_t,
            stream: xdal_backend_stream_t,
        ) -> xdal_status_raw,
    >,
    /// Synchronous copy between two devices' memory (overlapping ranges of
    /// one device: memmove's result). Fallback: through a host staging
    /// buffer.
    pub mem_copy_peer: Option<
        unsafe extern "C" fn(
            dst: *mut c_void,
            dst_device: c_int,
            src: *const c_void,
            src_device: c_int,
            bytes: usize,
        ) -> xdal_status_raw,
    >,
    /// Synchronous fill of device memory with the byte `value`. Fallback:
    /// `mem_copy` from a filled host buffer.
    pub mem_set: Option<unsafe extern "C" fn(dst: *mut c_void, value: c_int, bytes: usize) -> xdal_status_raw>,
    /// Fill enqueued on `stream`. Fallback: a host function on the stream.
    pub mem_set_async: Option<
        unsafe extern "C" fn(
            dst: *mut c_void,
            value: c_int,
            bytes: usize,
            stream: xdal_backend_stream_t,
        ) -> xdal_status_raw,
    >,
    /// Fills `stats` up to `stats->struct_size`. Fallback: counts kept by
    /// the front. Since 1.1 the front passes a struct with
    /// `peak_reserved_bytes`; a backend that leaves that field unwritten
    /// (one built against 1.0) gets the front's lower bound reported in its
    /// place (see `xdal_mem_stats_t`).
    pub mem_get_stats: Option<unsafe extern "C" fn(device: c_int, stats: *mut xdal_mem_stats_t) -> xdal_status_raw>,
    /// Resets the peak statistics: `peak_allocated_bytes` to the current
    /// allocation and (since 1.1) `peak_reserved_bytes` to the current
    /// reservation.
    pub mem_reset_peak_stats: Option<unsafe extern "C" fn(device: c_int) -> xdal_status_raw>,
    /// Releases cached, unused memory. Fallback: nothing to release.
    pub mem_empty_cache: Option<unsafe extern "C" fn(device: c_int) -> xdal_status_raw>,

    /// Required. Creates a stream on `device`; `flags` and `priority` are valid.
    pub stream_create: Option<
        unsafe extern "C" fn(
            device: c_int,
            flags: u32,
            priority: c_int,
            stream: *mut xdal_backend_stream_t,
        ) -> xdal_status_raw,
    >,
    /// Required. Destroys a stream; its pending work still completes.
    pub stream_destroy: Option<unsafe extern "C" fn(stream: xdal_backend_stream_t) -> xdal_status_raw>,
    /// Required. SUCCESS when all work is done, NOT_READY while some is
    /// pending, or the stream's sticky error.
    pub stream_query: Option<unsafe extern "C" fn(stream: xdal_backend_stream_t) -> xdal_status_raw>,
    /// Required. Waits for all work enqueued so far; returns the sticky error.
    pub stream_synchronize: Option<unsafe extern "C" fn(stream: xdal_backend_stream_t) -> xdal_status_raw>,
    /// Makes later work of `stream` wait for the event's recorded point
    /// (as of this call). Fallback: synchronize the event on the host.
    pub stream_wait_event:
        Option<unsafe extern "C" fn(stream: xdal_backend_stream_t, event: xdal_backend_event_t) -> xdal_status_raw>,
    /// Required. Enqueues `func(user_data)`; `func` is non-NULL.
    pub launch_host_func: Option<
        unsafe extern "C" fn(
            stream: xdal_backend_stream_t,
            func: xdal_host_fn_t,
            user_data: *mut c_void,
        ) -> xdal_status_raw,
    >,

    /// Required. Creates an event on `device`; `flags` are valid.
    pub event_create:
        Option<unsafe extern "C" fn(device: c_int, flags: u32, event: *mut xdal_backend_event_t) -> xdal_status_raw>,
    /// Required. Destroys an event; a pending record still completes.
    pub event_destroy: Option<unsafe extern "C" fn(event: xdal_backend_event_t) -> xdal_status_raw>,
    /// Required. Captures the point after all work enqueued on `stream` so far.
    pub event_record:
        Option<unsafe extern "C" fn(event: xdal_backend_event_t, stream: xdal_backend_stream_t) -> xdal_status_raw>,
    /// Required. SUCCESS when the recorded point is reached (or never
    /// recorded), else NOT_READY.
    pub event_query: Option<unsafe extern "C" fn(event: xdal_backend_event_t) -> xdal_status_raw>,
    /// Required. Waits for the recorded point.
    pub event_synchronize: Option<unsafe extern "C" fn(event: xdal_backend_event_t) -> xdal_status_raw>,
    /// Writes milliseconds between two completed, timed events. INVALID_VALUE
    /// if either was created without timing or never recorded; NOT_READY if
    /// either is pending.
    pub event_elapsed_time: Option<
        unsafe extern "C" fn(ms: *mut f32, start: xdal_backend_event_t, end: xdal_backend_event_t) -> xdal_status_raw,
    >,
    /// Writes the device whose address space contains `ptr`, or -1. Lets the
    /// front report a freed device pointer instead of treating it as host
    /// memory. Fallback: -1 (the front knows only live allocations).
    pub address_get_device: Option<unsafe extern "C" fn(ptr: *const c_void, device: *mut c_int) -> xdal_status_raw>,
    /// The calling thread's message for the backend's last failed entry, or
    /// NULL; valid until the thread's next backend call. The front adds it
    /// to its own message. Fallback: the front's message alone.
    pub last_error_message: Option<unsafe extern "C" fn() -> *const c_char>,

    /// Loads a module from a file (the backend's binary format: a host
    /// shared library on the fake backend). `XDAL_ERROR_NOT_FOUND` if the
    /// file does not exist, `XDAL_ERROR_INVALID_VALUE` if it is not a module.
    pub module_load:
        Option<unsafe extern "C" fn(path: *const c_char, module: *mut xdal_backend_module_t) -> xdal_status_raw>,
    /// Loads a module from `bytes` (> 0) bytes of memory, same format.
    pub module_load_data: Option<
        unsafe extern "C" fn(image: *const c_void, bytes: usize, module: *mut xdal_backend_module_t) -> xdal_status_raw,
    >,
    /// Writes the module of built-in kernels (ABI.md, "Built-in kernels").
    pub module_get_builtin: Option<unsafe extern "C" fn(module: *mut xdal_backend_module_t) -> xdal_status_raw>,
    /// Releases a module. Functions taken from it and launches still queued
    /// keep what they need alive until they are released or done.
    pub module_unload: Option<unsafe extern "C" fn(module: xdal_backend_module_t) -> xdal_status_raw>,
    /// Finds a kernel by name; `XDAL_ERROR_NOT_FOUND` if there is none.
    /// The function must be released with `function_release`.
    pub module_get_function: Option<
        unsafe extern "C" fn(
            module: xdal_backend_module_t,
            name: *const c_char,
            function: *mut xdal_backend_function_t,
        ) -> xdal_status_raw,
    >,
    /// Wraps a host function as a kernel (backends that run host code);
    /// `kernel` is non-NULL. Released with `function_release`.
    pub function_from_host: Option<
        unsafe extern "C" fn(kernel: xdal_host_kernel_t, function: *mut xdal_backend_function_t) -> xdal_status_raw,
    >,
    /// Releases a function; launches still queued keep it alive.
    pub function_release: Option<unsafe extern "C" fn(function: xdal_backend_function_t) -> xdal_status_raw>,
    /// Enqueues a kernel on `stream`. The front has checked the dimensions
    /// (non-zero, within the device's limits), the shared memory size and
    /// that every argument is non-NULL with a non-zero size; the backend
    /// checks argument sizes against kernels whose signature it knows, and
    /// copies the argument bytes before returning.
    pub launch_kernel: Option<
        unsafe extern "C" fn(
            function: xdal_backend_function_t,
            grid: xdal_dim3_t,
            block: xdal_dim3_t,
            shared_mem_bytes: usize,
            stream: xdal_backend_stream_t,
            args: *const xdal_kernel_arg_t,
            num_args: usize,
        ) -> xdal_status_raw,
    >,

    // --- Since 1.2 ---------------------------------------------------------
    /// Installs a fault-injection spec (`xdal_debug_set_faults`; the grammar
    /// is the backend's, documented with it), replacing the previous one;
    /// NULL or "" clears. A malformed spec is `XDAL_ERROR_INVALID_VALUE`,
    /// with a message pointing at the bad part, and leaves the previous one
    /// in place. Fallback: `XDAL_ERROR_NOT_SUPPORTED` (no fault injection).
    pub debug_set_faults: Option<unsafe extern "C" fn(spec: *const c_char) -> xdal_status_raw>,
    /// Instantiates a captured graph natively: `num_nodes` nodes of
    /// `device`, each after its dependencies (`nodes` and everything it
    /// points to are valid during the call only: copy what is kept). A
    /// backend that fills this fills `graph_exec_launch` and
    /// `graph_exec_destroy` too. A backend that cannot run this graph
    /// natively (a node its runtime's graphs cannot hold) succeeds and
    /// leaves `*exec` NULL: the front replays that graph. Fallback (all
    /// three NULL): the front replays the nodes through the eager entries,
    /// skipping their checks.
    pub graph_exec_create: Option<
        unsafe extern "C" fn(
            device: c_int,
            nodes: *const crate::xdal_backend_graph_node_t,
            num_nodes: usize,
            exec: *mut crate::xdal_backend_graph_exec_t,
        ) -> xdal_status_raw,
    >,
    /// Enqueues one run of every node of `exec` on `stream` (of the exec's
    /// device), in an order that respects the dependencies. The front never
    /// has two runs of one exec in flight at once. A node that fails makes
    /// the stream's error sticky (`XDAL_ERROR_LAUNCH_FAILED`).
    pub graph_exec_launch: Option<
        unsafe extern "C" fn(exec: crate::xdal_backend_graph_exec_t, stream: xdal_backend_stream_t) -> xdal_status_raw,
    >,
    /// Releases a native exec; runs still queued keep what they need.
    pub graph_exec_destroy: Option<unsafe extern "C" fn(exec: crate::xdal_backend_graph_exec_t) -> xdal_status_raw>,
    /// Times the next operation the calling thread enqueues through this
    /// table (a copy, set, kernel, host function or graph launch, on any
    /// stream): when it runs, the backend writes its start time to
    /// `slots[0]`, then its end time to `slots[1]` (nanoseconds of
    /// `CLOCK_MONOTONIC`, the clock of `xdal_get_timestamp_ns`; release
    /// ordering; the slots stay valid until written). One operation only;
    /// NULL cancels a request no operation took. Tracing times each traced
    /// operation so, at no cost to the stream. Fallback: the front brackets
    /// the operation with two host functions that write the times.
    pub time_next_enqueue: Option<unsafe extern "C" fn(slots: *mut u64) -> xdal_status_raw>,
}

/// See `struct xdal_backend_v1`.
pub type xdal_backend_v1_t = xdal_backend_v1;

// SAFETY: the table is immutable after the backend publishes it; `name`
// points to a static string. Sharing it across threads is what it is for.
unsafe impl Sync for xdal_backend_v1 {}
// SAFETY: as above: nothing in the table is tied to a thread.
unsafe impl Send for xdal_backend_v1 {}

/// The getter every backend exports as `xdal_backend_get_v1`: given the
/// front's ABI version, it writes its table, or refuses with
/// `XDAL_ERROR_VERSION_MISMATCH` (or any other status, with the process
/// left intact).
pub type xdal_backend_get_v1_fn = Option<
    unsafe extern "C" fn(
        front_abi_major: u32,
        front_abi_minor: u32,
        table: *mut *const xdal_backend_v1_t,
    ) -> xdal_status_raw,
>;

extern "C" {
    /// The one symbol a backend exports. The front calls it once with its
    /// own ABI version; the backend writes a pointer to its table (static,
    /// valid for the life of the process) and returns `XDAL_SUCCESS`, or
    /// refuses: `XDAL_ERROR_VERSION_MISMATCH` if it cannot serve that major
    /// version, any other status if it cannot start (no driver, no device).
    /// It must never abort the process.
    pub fn xdal_backend_get_v1(
        front_abi_major: u32,
        front_abi_minor: u32,
        table: *mut *const xdal_backend_v1_t,
    ) -> xdal_status_raw;
}
