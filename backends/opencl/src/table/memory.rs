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

pub(super) unsafe extern "C" fn free(_device: c_int, ptr: *mut c_void) -> xdal_status_raw {
    entry(|| memory::free(ptr))
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
    // SAFETY: the front passes a live stream.
    entry(|| memory::copy_async(dst, src, bytes, unsafe { &stream_ref(stream) }))
}

pub(super) unsafe extern "C" fn memcpy_peer(
    dst: *mut c_void,
    _dst_device: c_int,
    src: *const c_void,
    _src_device: c_int,
    bytes: usize,
) -> xdal_status_raw {
    // One context: SVM reaches both devices' memory.
    entry(|| memory::copy(dst, src, bytes))
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
    // SAFETY: the front passes a live stream.
    entry(|| memory::set_async(dst, value as u8, bytes, unsafe { &stream_ref(stream) }))
}
