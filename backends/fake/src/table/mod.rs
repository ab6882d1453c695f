//! The fake backend's table and getter: the only way in.
mod debug;
mod device;
mod event;
mod graph;
mod kernel;
mod memory;
mod stream;

use crate::error::{last_message, FakeResult};
use crate::stream::Stream;
use std::ffi::{c_char, CStr};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use xdal_abi::*;

static NAME: &CStr = c"fake";

static TABLE: xdal_backend_v1_t = xdal_backend_v1_t {
    struct_size: std::mem::size_of::<xdal_backend_v1_t>(),
    abi_major: XDAL_ABI_VERSION_MAJOR,
    abi_minor: XDAL_ABI_VERSION_MINOR,
    name: NAME.as_ptr(),
    device_get_count: Some(device::get_count),
    device_get_properties: Some(device::get_properties),
    device_synchronize: Some(device::synchronize),
    device_get_stream_priority_range: Some(device::get_stream_priority_range),
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
    mem_get_stats: Some(memory::get_stats),
    mem_reset_peak_stats: Some(memory::reset_peak_stats),
    mem_empty_cache: Some(memory::empty_cache),
    stream_create: Some(stream::create),
    stream_destroy: Some(stream::destroy),
    stream_query: Some(stream::query),
    stream_synchronize: Some(stream::synchronize),
    stream_wait_event: Some(stream::wait_event),
    launch_host_func: Some(stream::launch_host_func),
    event_create: Some(event::create),
    event_destroy: Some(event::destroy),
    event_record: Some(event::record),
    event_query: Some(event::query),
    event_synchronize: Some(event::synchronize),
    event_elapsed_time: Some(event::elapsed_time),
    address_get_device: Some(memory::address_get_device),
    last_error_message: Some(last_error_message),
    module_load: Some(kernel::module_load),
    module_load_data: Some(kernel::module_load_data),
    module_get_builtin: Some(kernel::module_get_builtin),
    module_unload: Some(kernel::module_unload),
    module_get_function: Some(kernel::module_get_function),
    function_from_host: Some(kernel::function_from_host),
    function_release: Some(kernel::function_release),
    launch_kernel: Some(kernel::launch_kernel),
    debug_set_faults: Some(debug::set_faults),
    graph_exec_create: Some(graph::exec_create),
    graph_exec_launch: Some(graph::exec_launch),
    graph_exec_destroy: Some(graph::exec_destroy),
    time_next_enqueue: Some(stream::time_next_enqueue),
};

/// The fake backend's table getter, with the signature every plugin's
/// `xdal_backend_get_v1` has.
///
/// # Safety
/// `table` must be NULL or point to writable storage for one pointer.
pub unsafe extern "C" fn xdal_fake_backend_get_v1(
    front_abi_major: u32,
    _front_abi_minor: u32,
    table: *mut *const xdal_backend_v1_t,
) -> xdal_status_raw {
    // The simulation starts at the first `device_get_count`, which reports
    // a start that failed (a bad `XDAL_FAKE_*` value) with its reason
    // through `last_error_message`, as any backend's table would.
    // SAFETY: the caller's contract is hand_out_table's.
    unsafe { xdal_backend_support::hand_out_table(front_abi_major, table, &TABLE) }
}

unsafe extern "C" fn last_error_message() -> *const c_char {
    last_message()
}

/// Borrows the stream behind a native handle made by `stream::create`.
///
/// # Safety
/// `handle` must be a live handle from `stream::create` (the front checks).
unsafe fn stream_ref(handle: xdal_backend_stream_t) -> ManuallyDrop<Arc<Stream>> {
    // SAFETY: per the contract above; the front keeps the handle alive for
    // the duration of the call.
    unsafe { xdal_backend_support::arc_ref(handle) }
}

/// Counts a call touching `device` for fault injection: the device's
/// loss, once injected.
fn touch(device: usize) -> FakeResult<()> {
    crate::fake().faults.touch(device)
}

/// `touch` for the device whose memory `addr` is in, if any.
fn touch_addr(addr: usize) -> FakeResult<()> {
    match crate::fake().devices.iter().position(|d| d.region.contains(addr)) {
        Some(device) => touch(device),
        None => Ok(()),
    }
}

/// Writes `value` through an output pointer the front checked; the last
/// step of an entry, so it returns the entry's success.
///
/// # Safety
/// `out` must be valid for a write of `T`.
unsafe fn write_out<T>(out: *mut T, value: T) -> FakeResult<()> {
    // SAFETY: per the contract above.
    unsafe { out.write(value) };
    Ok(())
}
