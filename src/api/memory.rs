//! Allocation: device, pinned host and stream-ordered; pointer attributes;
//! allocator statistics.
use crate::api::device::check_struct_size;
use crate::backend::{backend, call, Backend};
use crate::dispatch::memory::{count_alloc, count_free};
use crate::error::{bail, boundary, err, Error, Out, XResult};
use crate::graph::capture;
use crate::registry::{Allocation, MemoryType, REGISTRY};
use crate::threads::current_device;
use crate::trace::activity::{self, Info};
use std::ffi::{c_int, c_void};
use xdal_abi::xdal_activity_kind::{XDAL_ACTIVITY_ALLOC as ALLOC, XDAL_ACTIVITY_FREE as FREE};
use xdal_abi::*;

/// The device whose address space holds `addr`, if the backend can tell.
pub(crate) fn address_device(backend: &Backend, addr: usize) -> Option<c_int> {
    backend.table.address_get_device?;
    let mut device = -1;
    call!(backend, address_get_device(addr as *const c_void, &mut device)).ok()?;
    (device >= 0).then_some(device)
}

/// Explains why `ptr` cannot be freed as `wanted` memory.
fn not_freeable(backend: &Backend, ptr: *mut c_void, wanted: MemoryType) -> Error {
    let addr = ptr as usize;
    match REGISTRY.find(addr) {
        Some(a) if a.base != addr => err!(
            XDAL_ERROR_INVALID_POINTER,
            "{ptr:p} points inside the {}-byte allocation at {:#x}: free its base",
            a.size,
            a.base
        ),
        Some(a) if a.memory == MemoryType::Host => {
            err!(XDAL_ERROR_INVALID_POINTER, "{ptr:p} is pinned host memory: free it with xdal_free_host")
        }
        Some(_) => err!(XDAL_ERROR_INVALID_POINTER, "{ptr:p} is device memory: free it with xdal_free"),
        None => match (address_device(backend, addr), wanted) {
            (Some(device), _) => {
                err!(XDAL_ERROR_INVALID_POINTER, "{ptr:p} is not a live allocation of device {device} (freed already?)")
            }
            (None, MemoryType::Host) => err!(XDAL_ERROR_INVALID_POINTER, "{ptr:p} is not memory from xdal_malloc_host"),
            (None, _) => err!(
                XDAL_ERROR_INVALID_POINTER,
                "{ptr:p} is not device memory from xdal_malloc (a host pointer, or freed already?)"
            ),
        },
    }
}

fn is_device(a: &Allocation) -> bool {
    a.memory.is_device()
}

fn check_size(size: usize) -> XResult<()> {
    if size == 0 {
        bail!(XDAL_ERROR_INVALID_VALUE, "size is 0");
    }
    Ok(())
}

/// Allocates `size` bytes (> 0) on the current device; 256-byte aligned.
#[no_mangle]
pub extern "C" fn xdal_malloc(ptr: *mut *mut c_void, size: usize) -> xdal_status_t {
    boundary(c"xdal_malloc", || {
        let out = Out::new(ptr, "ptr")?;
        check_size(size)?;
        capture::check_unsafe_call("xdal_malloc")?;
        let backend = backend()?;
        let device = backend.device(current_device())?.get();
        let mut addr = std::ptr::null_mut();
        activity::host_traced(
            backend,
            device,
            || Info::memory(ALLOC, c"malloc", size),
            || {
                let result = call!(backend, mem_alloc(device, size, &mut addr));
                count_alloc(backend, device, size, &result);
                result
            },
        )?;
        publish(Allocation { base: addr as usize, size, memory: MemoryType::Device(device) });
        out.write(addr);
        Ok(())
    })
}

/// Frees device memory from `xdal_malloc` (or `xdal_malloc_async`) after
/// the device's pending work. NULL is a no-op. Anything but the base of a
/// live device allocation is `XDAL_ERROR_INVALID_POINTER`.
#[no_mangle]
pub extern "C" fn xdal_free(ptr: *mut c_void) -> xdal_status_t {
    boundary(c"xdal_free", || {
        let backend = backend()?;
        if ptr.is_null() {
            return Ok(());
        }
        capture::check_unsafe_call("xdal_free")?;
        // It waits for the device's work (below); xdal_free_async does not.
        crate::threads::refuse_wait_in_callback("xdal_free (xdal_free_async does not wait)")?;
        refuse_graph_memory(ptr)?;
        let Some(allocation) = REGISTRY.remove_if(ptr as usize, is_device) else {
            return Err(not_freeable(backend, ptr, MemoryType::Device(0)));
        };
        let device = allocation.memory.device().unwrap_or_default();
        // Pending work may still use the block: wait for it, as cudaFree
        // does. A sticky error belongs to that work, not to this free.
        let _ = crate::dispatch::device::synchronize(backend, device);
        activity::host_traced(
            backend,
            device,
            || Info::memory(FREE, c"free", allocation.size),
            || call!(backend, mem_free(device, ptr)),
        )
        .inspect_err(|_| REGISTRY.insert(allocation))?;
        count_free(backend, device, allocation.size);
        retired(&allocation);
        Ok(())
    })
}

/// Allocates `size` bytes (> 0) of page-aligned, pinned host memory, which
/// host code may always access.
#[no_mangle]
pub extern "C" fn xdal_malloc_host(ptr: *mut *mut c_void, size: usize) -> xdal_status_t {
    boundary(c"xdal_malloc_host", || {
        let out = Out::new(ptr, "ptr")?;
        check_size(size)?;
        let backend = backend()?;
        let addr = crate::dispatch::memory::alloc_host(backend, size)?;
        publish(Allocation { base: addr as usize, size, memory: MemoryType::Host });
        out.write(addr);
        Ok(())
    })
}

/// Frees memory from `xdal_malloc_host`. NULL is a no-op; anything else is
/// `XDAL_ERROR_INVALID_POINTER`.
#[no_mangle]
pub extern "C" fn xdal_free_host(ptr: *mut c_void) -> xdal_status_t {
    boundary(c"xdal_free_host", || {
        let backend = backend()?;
        if ptr.is_null() {
            return Ok(());
        }
        let Some(allocation) = REGISTRY.remove_if(ptr as usize, |a| a.memory == MemoryType::Host) else {
            return Err(not_freeable(backend, ptr, MemoryType::Host));
        };
        crate::dispatch::memory::free_host(backend, ptr, allocation.size)
            .inspect_err(|_| REGISTRY.insert(allocation))?;
        retired(&allocation);
        Ok(())
    })
}

/// Allocates `size` bytes (> 0) on the stream's device from the
/// stream-ordered pool: usable by work enqueued on `stream` after this call
/// (and by any work once the stream has reached this point).
#[no_mangle]
pub extern "C" fn xdal_malloc_async(ptr: *mut *mut c_void, size: usize, stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_malloc_async", || {
        let out = Out::new(ptr, "ptr")?;
        check_size(size)?;
        let stream = crate::objects::stream(stream)?;
        let backend = backend()?;
        if let Some(capture) = capture::of(&stream) {
            out.write(capture::malloc(&capture, &stream, backend, size)? as *mut c_void);
            return Ok(());
        }
        let device = stream.device.get();
        let addr = activity::host_traced(
            backend,
            device,
            || Info::memory(ALLOC, c"malloc_async", size),
            || crate::dispatch::memory::alloc_async(backend, &stream, size),
        )?;
        let memory = MemoryType::Device(stream.device.get());
        publish(Allocation { base: addr as usize, size, memory });
        out.write(addr);
        Ok(())
    })
}

/// Frees device memory when `stream` reaches this point; the block returns
/// to the pool. The pointer is invalid for every call made after this one.
/// NULL is a no-op.
#[no_mangle]
pub extern "C" fn xdal_free_async(ptr: *mut c_void, stream: xdal_stream_t) -> xdal_status_t {
    boundary(c"xdal_free_async", || {
        let backend = backend()?;
        if ptr.is_null() {
            return Ok(());
        }
        let stream = crate::objects::stream(stream)?;
        if let Some(capture) = capture::of(&stream) {
            return capture::free(&capture, &stream, ptr as usize);
        }
        refuse_graph_memory(ptr)?;
        let Some(allocation) = REGISTRY.remove_if(ptr as usize, is_device) else {
            return Err(not_freeable(backend, ptr, MemoryType::Device(0)));
        };
        let device = allocation.memory.device().unwrap_or_default();
        let info = || Info::memory(FREE, c"free_async", allocation.size);
        activity::host_traced(backend, device, info, || {
            crate::dispatch::memory::free_async(backend, &stream, device, ptr)
        })
        .inspect_err(|_| REGISTRY.insert(allocation))?;
        count_free(backend, device, allocation.size);
        retired(&allocation);
        Ok(())
    })
}

/// Refuses a free of memory a graph reserved (since 1.2).
fn refuse_graph_memory(ptr: *mut c_void) -> XResult<()> {
    if crate::graph::memory::is_reserved(ptr as usize) {
        bail!(
            XDAL_ERROR_INVALID_POINTER,
            "{ptr:p} was allocated in a stream capture: it belongs to the graph until xdal_graph_destroy"
        );
    }
    Ok(())
}

/// Makes a new allocation known: to the registry, and to validation.
fn publish(allocation: Allocation) {
    REGISTRY.insert(allocation);
    crate::validate::created(allocation_kind(&allocation), allocation.base, || match allocation.memory {
        MemoryType::Device(device) => format!("{} bytes on device {device}", allocation.size),
        _ => format!("{} bytes", allocation.size),
    });
}

/// Tells validation that an allocation was freed (the registry has let
/// it go already).
fn retired(allocation: &Allocation) {
    crate::validate::destroyed(allocation_kind(allocation), allocation.base);
}

fn allocation_kind(allocation: &Allocation) -> &'static str {
    if allocation.memory == MemoryType::Host {
        "pinned host allocation"
    } else {
        "device allocation"
    }
}

/// Describes the allocation that contains `ptr` (interior pointers too).
/// An unknown pointer, NULL included, is success with type
/// `XDAL_MEMORY_TYPE_UNREGISTERED`, device -1, base NULL and size 0.
#[no_mangle]
pub extern "C" fn xdal_pointer_get_attributes(
    ptr: *const c_void,
    attrs: *mut xdal_pointer_attributes_t,
) -> xdal_status_t {
    boundary(c"xdal_pointer_get_attributes", || {
        let attrs = Out::new(attrs, "attrs")?;
        check_struct_size(&attrs, "attrs")?;
        backend()?;
        let mut value = xdal_pointer_attributes_t {
            struct_size: std::mem::size_of::<xdal_pointer_attributes_t>(),
            type_: xdal_memory_type::XDAL_MEMORY_TYPE_UNREGISTERED,
            device: -1,
            base: std::ptr::null_mut(),
            size: 0,
        };
        if let Some(a) = REGISTRY.find(ptr as usize) {
            value.base = a.base as *mut c_void;
            value.size = a.size;
            (value.type_, value.device) = a.memory.to_abi();
        }
        // SAFETY: the caller's struct holds `struct_size` bytes, checked above.
        unsafe { write_sized(attrs.as_ptr(), &value) };
        Ok(())
    })
}

/// Fills `stats` with the allocator statistics of `device`. The caller
/// sets `stats->struct_size`; only the fields that fit are written (a
/// caller built against 1.0 gets the 1.0 fields, nothing past them).
/// `XDAL_ERROR_NULL_POINTER` for NULL `stats`, `XDAL_ERROR_INVALID_VALUE`
/// for a `struct_size` below `sizeof(size_t)`, `XDAL_ERROR_INVALID_DEVICE`
/// for a bad device.
#[no_mangle]
pub extern "C" fn xdal_mem_get_stats(device: c_int, stats: *mut xdal_mem_stats_t) -> xdal_status_t {
    boundary(c"xdal_mem_get_stats", || {
        let stats = Out::new(stats, "stats")?;
        check_struct_size(&stats, "stats")?;
        let backend = backend()?;
        backend.device(device)?;
        let value = crate::dispatch::device::mem_stats(backend, device)?;
        // SAFETY: the caller's struct holds `struct_size` bytes, checked above.
        unsafe { write_sized(stats.as_ptr(), &value) };
        Ok(())
    })
}

/// Resets `peak_allocated_bytes` of `device` to its current allocation
/// and, since 1.1, `peak_reserved_bytes` to its current reservation.
#[no_mangle]
pub extern "C" fn xdal_mem_reset_peak_stats(device: c_int) -> xdal_status_t {
    boundary(c"xdal_mem_reset_peak_stats", || {
        let backend = backend()?;
        crate::dispatch::device::reset_peak(backend, backend.device(device)?.get())
    })
}

/// Gives the device back the pool's cached blocks whose frees have
/// completed; `reserved_bytes` drops accordingly.
#[no_mangle]
pub extern "C" fn xdal_mem_empty_cache(device: c_int) -> xdal_status_t {
    boundary(c"xdal_mem_empty_cache", || {
        let backend = backend()?;
        crate::dispatch::device::empty_cache(backend, backend.device(device)?.get())
    })
}
