//! Memory operations: the backend's entry, or a fallback built on its
//! required entries.
use crate::backend::{call, call_or, Backend};
use crate::dispatch::stats;
use crate::error::{err, XResult};
use crate::objects::StreamObj;
use std::ffi::{c_int, c_void};
use xdal_abi::xdal_memcpy_kind::*;

/// Staging buffers of the fallbacks move memory in pieces of this size.
const CHUNK: usize = 1 << 20;

/// Sets device memory. Fallback: copies from a filled host buffer.
pub(crate) fn set(backend: &'static Backend, dst: *mut c_void, value: c_int, bytes: usize) -> XResult<()> {
    call_or!(backend, mem_set(dst, value, bytes), set_by_copies(backend, dst, value, bytes))
}

fn set_by_copies(backend: &'static Backend, dst: *mut c_void, value: c_int, bytes: usize) -> XResult<()> {
    let pattern = vec![value.to_le_bytes()[0]; bytes.min(CHUNK)];
    for offset in (0..bytes).step_by(CHUNK) {
        let len = (bytes - offset).min(CHUNK);
        let target = (dst as usize + offset) as *mut c_void;
        call!(backend, mem_copy(target, pattern.as_ptr() as *const c_void, len, XDAL_MEMCPY_HOST_TO_DEVICE))?;
    }
    Ok(())
}

/// Copies between devices. Fallback: through a host staging buffer.
pub(crate) fn copy_peer(
    backend: &'static Backend,
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    bytes: usize,
) -> XResult<()> {
    call_or!(
        backend,
        mem_copy_peer(dst, dst_device, src, src_device, bytes),
        copy_peer_through_host(backend, dst, src, bytes)
    )
}

fn copy_peer_through_host(
    backend: &'static Backend,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
) -> XResult<()> {
    let mut staging = vec![0u8; bytes.min(CHUNK)];
    // Each piece is read whole before it is written; towards higher
    // addresses the pieces go from the end, so that overlapping ranges get
    // memmove's result (no piece overwrites source bytes still to be read).
    let offsets = (0..bytes).step_by(CHUNK);
    let offsets: Box<dyn Iterator<Item = usize>> =
        if (dst as usize) > (src as usize) { Box::new(offsets.rev()) } else { Box::new(offsets) };
    for offset in offsets {
        let len = (bytes - offset).min(CHUNK);
        let (to, from) = ((dst as usize + offset) as *mut c_void, (src as usize + offset) as *const c_void);
        let buffer = staging.as_mut_ptr() as *mut c_void;
        call!(backend, mem_copy(buffer, from, len, XDAL_MEMCPY_DEVICE_TO_HOST))?;
        call!(backend, mem_copy(to, buffer, len, XDAL_MEMCPY_HOST_TO_DEVICE))?;
    }
    Ok(())
}

fn page_len(size: usize) -> XResult<usize> {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    size.checked_next_multiple_of(page).ok_or_else(|| err!(XDAL_ERROR_OUT_OF_MEMORY, "{size} bytes of host memory"))
}

/// Pinned host memory. Fallback: page-aligned host memory.
pub(crate) fn alloc_host(backend: &'static Backend, size: usize) -> XResult<*mut c_void> {
    let mut ptr = std::ptr::null_mut();
    call_or!(backend, mem_alloc_host(size, &mut ptr), map_host(size).map(|mapped| ptr = mapped))?;
    Ok(ptr)
}

fn map_host(size: usize) -> XResult<*mut c_void> {
    // SAFETY: an anonymous private mapping touches no existing memory.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page_len(size)?,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(err!(XDAL_ERROR_OUT_OF_MEMORY, "cannot map {size} bytes of host memory"));
    }
    Ok(ptr)
}

/// Frees `alloc_host` memory of `size` bytes the way it was allocated: by
/// the backend when it fills `mem_alloc_host` (xdal_backend.h makes
/// `mem_free_host` required then), else by unmapping.
pub(crate) fn free_host(backend: &'static Backend, ptr: *mut c_void, size: usize) -> XResult<()> {
    if backend.table.mem_alloc_host.is_some() {
        return call!(backend, mem_free_host(ptr));
    }
    // SAFETY: `ptr` is a mapping of `page_len(size)` bytes made above; the
    // registry hands each out to one free only.
    unsafe { libc::munmap(ptr, page_len(size)?) };
    Ok(())
}

/// Stream-ordered allocation. Fallback: a plain allocation, usable at once
/// (and so by any later work of the stream).
pub(crate) fn alloc_async(backend: &'static Backend, stream: &StreamObj, size: usize) -> XResult<*mut c_void> {
    let mut ptr = std::ptr::null_mut();
    let result = call_or!(
        backend,
        mem_alloc_async(stream.device.get(), size, stream.native, &mut ptr),
        call!(backend, mem_alloc(stream.device.get(), size, &mut ptr))
    );
    count_alloc(backend, stream.device.get(), size, &result);
    result.map(|()| ptr)
}

/// Stream-ordered free. Fallback: wait for the stream, then free. As for
/// host memory, `mem_alloc_async` decides who made the block.
pub(crate) fn free_async(
    backend: &'static Backend,
    stream: &StreamObj,
    device: c_int,
    ptr: *mut c_void,
) -> XResult<()> {
    if backend.table.mem_alloc_async.is_some() {
        return call!(backend, mem_free_async(device, ptr, stream.native));
    }
    crate::threads::refuse_wait_in_callback(
        "xdal_free_async (this backend has no stream-ordered free: it waits for the stream)",
    )?;
    call!(backend, stream_synchronize(stream.native))?;
    call!(backend, mem_free(device, ptr))
}

/// Keeps the front's statistics, for backends without `mem_get_stats`.
pub(crate) fn count_alloc(backend: &Backend, device: c_int, size: usize, result: &XResult<()>) {
    if backend.table.mem_get_stats.is_some() {
        return;
    }
    match result {
        Ok(()) => stats::allocated(device, size),
        Err(e) if e.status == xdal_abi::xdal_status::XDAL_ERROR_OUT_OF_MEMORY => stats::out_of_memory(device),
        Err(_) => {}
    }
}

/// Keeps the front's statistics, for backends without `mem_get_stats`.
pub(crate) fn count_free(backend: &Backend, device: c_int, size: usize) {
    if backend.table.mem_get_stats.is_none() {
        stats::freed(device, size);
    }
}
