//! The OpenCL backend's table and getter: the only way in. Entries left
//! NULL take the front's fallbacks (statistics, stream-ordered allocation)
//! or are `XDAL_ERROR_NOT_SUPPORTED`.
mod device;
mod memory;
mod objects;

use crate::error::last_message;
use crate::stream::Stream;
use objects::ClObjects;
use std::ffi::{c_char, CStr};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use xdal_abi::*;
use xdal_backend_support::objects as shared;

static NAME: &CStr = c"opencl";

static TABLE: xdal_backend_v1_t = xdal_backend_v1_t {
    struct_size: std::mem::size_of::<xdal_backend_v1_t>(),
    abi_major: XDAL_ABI_VERSION_MAJOR,
    abi_minor: XDAL_ABI_VERSION_MINOR,
    name: NAME.as_ptr(),
    device_get_count: Some(device::get_count),
    device_get_properties: Some(device::get_properties),
    device_synchronize: Some(device::synchronize),
    device_get_stream_priority_range: Some(device::stream_priority_range),
    device_can_access_peer: Some(device::can_access_peer),
    mem_get_info: None,
    mem_alloc: Some(memory::malloc),
    mem_free: Some(memory::free),
    mem_alloc_host: Some(memory::malloc_host),
    mem_free_host: Some(memory::free_host),
    mem_alloc_async: None,
    mem_free_async: None,
    mem_copy: Some(memory::memcpy),
    mem_copy_async: Some(memory::memcpy_async),
    mem_copy_peer: Some(memory::memcpy_peer),
    mem_set: Some(memory::memset),
    mem_set_async: Some(memory::memset_async),
    mem_get_stats: None,
    mem_reset_peak_stats: None,
    mem_empty_cache: None,
    stream_create: Some(shared::stream_create::<ClObjects>),
    stream_destroy: Some(shared::stream_destroy::<ClObjects>),
    stream_query: Some(shared::stream_query::<ClObjects>),
    stream_synchronize: Some(shared::stream_synchronize::<ClObjects>),
    stream_wait_event: Some(shared::stream_wait_event::<ClObjects>),
    launch_host_func: Some(shared::launch_host_func::<ClObjects>),
    event_create: Some(shared::event_create::<ClObjects>),
    event_destroy: Some(shared::event_destroy::<ClObjects>),
    event_record: Some(shared::event_record::<ClObjects>),
    event_query: Some(shared::event_query::<ClObjects>),
    event_synchronize: Some(shared::event_synchronize::<ClObjects>),
    event_elapsed_time: Some(shared::event_elapsed_time::<ClObjects>),
    address_get_device: None,
    last_error_message: Some(last_error_message),
    module_load: Some(shared::module_load::<ClObjects>),
    module_load_data: Some(shared::module_load_data::<ClObjects>),
    module_get_builtin: Some(shared::module_get_builtin::<ClObjects>),
    module_unload: Some(shared::module_unload::<ClObjects>),
    module_get_function: Some(shared::module_get_function::<ClObjects>),
    function_from_host: Some(shared::function_from_host::<ClObjects>),
    function_release: Some(shared::function_release::<ClObjects>),
    launch_kernel: Some(shared::launch_kernel::<ClObjects>),
    // No fault injection: the front answers XDAL_ERROR_NOT_SUPPORTED.
    debug_set_faults: None,
    // Graphs: the front's generic replay (PoCL has no cl_khr_command_buffer).
    graph_exec_create: None,
    graph_exec_launch: None,
    graph_exec_destroy: None,
    // Activity times from OpenCL's profiling of each command (timing.rs).
    time_next_enqueue: Some(time_next_enqueue),
};

/// The OpenCL backend's table getter, with the signature every plugin's
/// `xdal_backend_get_v1` has. The runtime is opened at the first
/// `device_get_count`, which reports what is missing.
///
/// # Safety
/// `table` must be NULL or point to writable storage for one pointer.
pub unsafe extern "C" fn xdal_opencl_backend_get_v1(
    front_abi_major: u32,
    _front_abi_minor: u32,
    table: *mut *const xdal_backend_v1_t,
) -> xdal_status_raw {
    // SAFETY: the caller's contract is hand_out_table's.
    unsafe { xdal_backend_support::hand_out_table(front_abi_major, table, &TABLE) }
}

unsafe extern "C" fn last_error_message() -> *const c_char {
    last_message()
}

unsafe extern "C" fn time_next_enqueue(slots: *mut u64) -> xdal_status_raw {
    crate::error::entry(|| {
        crate::timing::time_next(slots as usize);
        Ok(())
    })
}

/// Borrows the stream behind a native handle made by `stream_create`.
///
/// # Safety
/// `handle` must be a live stream handle (the front checks, and keeps it
/// alive for the duration of the call).
unsafe fn stream_ref(handle: xdal_backend_stream_t) -> ManuallyDrop<Arc<Stream>> {
    // SAFETY: per the contract above.
    unsafe { shared::stream_ref::<ClObjects>(handle) }
}
