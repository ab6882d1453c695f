//! Memory entries.
use super::stream_ref;
use crate::error::entry;
use crate::memory;
use std::ffi::{c_int, c_void};
use xdal_abi::*;

pub(super) unsafe extern "C" fn malloc(device: c_int, size: usize, ptr: *mut *mut c_void) -> xdal_status_raw {
    entry(|| {
        let p = memory::alloc(device as usize, size)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { ptr.write(p) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn free(device: c_int, ptr: *mut c_void) -> xdal_status_raw {
    entry(|| memory::free(device as usize, ptr))
}

pub(super) unsafe extern "C" fn malloc_host(size: usize, ptr: *mut *mut c_void) -> xdal_status_raw {
    entry(|| {
        let p = memory::alloc_host(size)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { ptr.write(p) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn free_host(ptr: *mut c_void) -> xdal_status_raw {
    entry(|| memory::free_host(ptr))
}

pub(super) unsafe extern "C" fn malloc_async(
    device: c_int,
    size: usize,
    stream: xdal_backend_stream_t,
    ptr: *mut *mut c_void,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes a live stream.
        let p = memory::alloc_async(device as usize, size, unsafe { &stream_ref(stream) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { ptr.write(p) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn free_async(
    _device: c_int,
    ptr: *mut c_void,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    // SAFETY: the front passes a live stream.
    entry(|| memory::free_async(ptr, unsafe { &stream_ref(stream) }))
}

pub(super) unsafe extern "C" fn address_get_device(ptr: *const c_void, device: *mut c_int) -> xdal_status_raw {
    entry(|| {
        let found = memory::device_of(ptr)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { device.write(found.map_or(-1, |d| d as c_int)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn memcpy(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: xdal_memcpy_kind_t,
) -> xdal_status_raw {
    entry(|| {
        if kind == xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_HOST {
            // SAFETY: the front checked both host ranges.
            unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), bytes) };
            return Ok(());
        }
        memory::copy(dst, src, bytes)
    })
}

pub(super) unsafe extern "C" fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    _kind: xdal_memcpy_kind_t,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes a live stream.
        let stream = unsafe { stream_ref(stream) };
        crate::timing::around(&stream, || memory::copy_async(dst, src, bytes, &stream))
    })
}

pub(super) unsafe extern "C" fn memcpy_peer(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    bytes: usize,
) -> xdal_status_raw {
    entry(|| memory::copy_peer(dst, dst_device as usize, src, src_device as usize, bytes))
}

pub(super) unsafe extern "C" fn memset(dst: *mut c_void, value: c_int, bytes: usize) -> xdal_status_raw {
    entry(|| memory::set(dst, value as u8, bytes))
}

pub(super) unsafe extern "C" fn memset_async(
    dst: *mut c_void,
    value: c_int,
    bytes: usize,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes a live stream.
        let stream = unsafe { stream_ref(stream) };
        crate::timing::around(&stream, || memory::set_async(dst, value as u8, bytes, &stream))
    })
}
