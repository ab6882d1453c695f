//! The CUDA backend's table and getter: the only way in. Entries left NULL
//! take the front's fallbacks (statistics and empty_cache: the front's
//! counts) or are `XDAL_ERROR_NOT_SUPPORTED` (fault injection).
mod device;
mod graph;
mod memory;
mod objects;

use crate::error::last_message;
use crate::stream::Stream;
use objects::CuObjects;
use std::ffi::{c_char, CStr};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use xdal_abi::*;
use xdal_backend_support::objects as shared;

static NAME: &CStr = c"cuda";

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
    mem_get_info: Some(device::mem_get_info),
    mem_alloc: Some(memory::malloc),
    mem_free: Some(memory::free),
    mem_alloc_host: Some(memory::malloc_host),
    mem_free_host: Some(memory::free_host),
    mem_alloc_async: Some(memory::malloc_async),
    mem_free_async: Some(memory::free_async),
    mem_copy: Some(memory::memcpy),
    mem_copy_async: Some(memory::memcpy_async),
    mem_copy_peer: Some(memory::memcpy_peer),
    mem_set: Some(memory::memset),
    mem_set_async: Some(memory::memset_async),
    // The front's counts of what went through xdal: the driver's pools
    // keep no statistics xdal's numbers could be made of.
    mem_get_stats: None,
    mem_reset_peak_stats: None,
    mem_empty_cache: None,
    stream_create: Some(shared::stream_create::<CuObjects>),
    stream_destroy: Some(shared::stream_destroy::<CuObjects>),
    stream_query: Some(shared::stream_query::<CuObjects>),
    stream_synchronize: Some(shared::stream_synchronize::<CuObjects>),
    stream_wait_event: Some(shared::stream_wait_event::<CuObjects>),
    launch_host_func: Some(shared::launch_host_func::<CuObjects>),
    event_create: Some(shared::event_create::<CuObjects>),
    event_destroy: Some(shared::event_destroy::<CuObjects>),
    event_record: Some(shared::event_record::<CuObjects>),
    event_query: Some(shared::event_query::<CuObjects>),
    event_synchronize: Some(shared::event_synchronize::<CuObjects>),
    event_elapsed_time: Some(shared::event_elapsed_time::<CuObjects>),
    address_get_device: Some(memory::address_get_device),
    last_error_message: Some(last_error_message),
    module_load: Some(shared::module_load::<CuObjects>),
    module_load_data: Some(shared::module_load_data::<CuObjects>),
    module_get_builtin: Some(shared::module_get_builtin::<CuObjects>),
    module_unload: Some(shared::module_unload::<CuObjects>),
    module_get_function: Some(shared::module_get_function::<CuObjects>),
    function_from_host: Some(shared::function_from_host::<CuObjects>),
    function_release: Some(shared::function_release::<CuObjects>),
    launch_kernel: Some(shared::launch_kernel::<CuObjects>),
    // No fault injection: the front answers XDAL_ERROR_NOT_SUPPORTED.
    debug_set_faults: None,
    // CUDA graphs; a graph they cannot express gets a NULL exec, which the
    // front replays.
    graph_exec_create: Some(graph::exec_create),
    graph_exec_launch: Some(graph::exec_launch),
    graph_exec_destroy: Some(graph::exec_destroy),
    // CUDA events around the operation (timing.rs).
    time_next_enqueue: Some(time_next_enqueue),
};

/// The CUDA backend's table getter, with the signature every plugin's
/// `xdal_backend_get_v1` has. The driver is opened at the first
/// `device_get_count`, which reports what is missing.
///
/// # Safety
/// `table` must be NULL or point to writable storage for one pointer.
pub unsafe extern "C" fn xdal_cuda_backend_get_v1(
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
    unsafe { shared::stream_ref::<CuObjects>(handle) }
}
