//! Memory and copy entries. Device addresses from users are translated to
//! the backend alias before any access (a no-op outside protect mode).
use super::{stream_ref, touch, touch_addr, write_out};
use crate::error::{entry, failure};
use crate::faults::Op as Fault;
use crate::lock::IgnorePoison;
use crate::region::{map, page_size, unmap};
use crate::stream::{Op, SendPtr};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, OnceLock};
use xdal_abi::*;

pub(super) unsafe extern "C" fn malloc(device: c_int, size: usize, ptr: *mut *mut c_void) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        let addr = crate::fake().device(device as usize).malloc(size)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(ptr, addr as *mut c_void) }
    })
}

pub(super) unsafe extern "C" fn free(device: c_int, ptr: *mut c_void) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        crate::fake().device(device as usize).free(ptr as usize)
    })
}

/// Pinned host allocations: address -> mapping length.
fn host_blocks() -> &'static Mutex<HashMap<usize, usize>> {
    static BLOCKS: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    BLOCKS.get_or_init(Default::default)
}

pub(super) unsafe extern "C" fn malloc_host(size: usize, ptr: *mut *mut c_void) -> xdal_status_raw {
    entry(|| {
        let len = size
            .checked_next_multiple_of(page_size())
            .ok_or_else(|| failure!(XDAL_ERROR_OUT_OF_MEMORY, "{size} bytes of pinned memory"))?;
        let addr = map(len, libc::PROT_READ | libc::PROT_WRITE)?;
        host_blocks().lock().ignore_poison().insert(addr, len);
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(ptr, addr as *mut c_void) }
    })
}

pub(super) unsafe extern "C" fn free_host(ptr: *mut c_void) -> xdal_status_raw {
    entry(|| {
        let len = host_blocks().lock().ignore_poison().remove(&(ptr as usize));
        let len = len.ok_or_else(|| failure!(XDAL_ERROR_INVALID_POINTER, "{ptr:p} is not pinned host memory"))?;
        unmap(ptr as usize, len);
        Ok(())
    })
}

pub(super) unsafe extern "C" fn malloc_async(
    device: c_int,
    size: usize,
    stream: xdal_backend_stream_t,
    ptr: *mut *mut c_void,
) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        // SAFETY: the front passes a live stream handle.
        let stream = unsafe { stream_ref(stream) };
        let addr = crate::fake().device(device as usize).malloc_async(size, &stream)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(ptr, addr as *mut c_void) }
    })
}

pub(super) unsafe extern "C" fn free_async(
    device: c_int,
    ptr: *mut c_void,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        // SAFETY: the front passes a live stream handle.
        let stream = unsafe { stream_ref(stream) };
        crate::fake().device(device as usize).free_async(ptr as usize, &stream)
    })
}

pub(super) unsafe extern "C" fn memcpy(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    _kind: xdal_memcpy_kind_t,
) -> xdal_status_raw {
    entry(|| {
        touch_addr(dst as usize)?;
        touch_addr(src as usize)?;
        let fake = crate::fake();
        fake.faults.check(Fault::Copy)?;
        let (dst, src) = (fake.alias(dst as usize), fake.alias(src as usize));
        // SAFETY: the front checked both ranges; device addresses now point
        // into the accessible alias. `copy` allows overlap (D2D in place).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
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
        let fake = crate::fake();
        let (dst, src) = (fake.alias(dst as usize), fake.alias(src as usize));
        // SAFETY: the front passes a live stream handle.
        let stream = unsafe { stream_ref(stream) };
        touch(stream.device)?;
        if let Err(fault) = fake.faults.check(Fault::Copy) {
            stream.enqueue(crate::stream::timed(Op::Task(Box::new(move || Err(fault)))));
            return Ok(());
        }
        let copy = Op::Copy { dst: SendPtr(dst as *mut c_void), src: SendPtr(src as *mut c_void), len: bytes };
        stream.enqueue(crate::stream::timed(copy));
        Ok(())
    })
}

pub(super) unsafe extern "C" fn memcpy_peer(
    dst: *mut c_void,
    _dst_device: c_int,
    src: *const c_void,
    _src_device: c_int,
    bytes: usize,
) -> xdal_status_raw {
    // SAFETY: same contract as `memcpy`.
    unsafe { memcpy(dst, src, bytes, xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_DEVICE) }
}

pub(super) unsafe extern "C" fn memset(dst: *mut c_void, value: c_int, bytes: usize) -> xdal_status_raw {
    entry(|| {
        touch_addr(dst as usize)?;
        let dst = crate::fake().alias(dst as usize);
        // SAFETY: the front checked the range; `dst` is the accessible alias.
        unsafe { std::ptr::write_bytes(dst as *mut u8, value as u8, bytes) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn memset_async(
    dst: *mut c_void,
    value: c_int,
    bytes: usize,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(|| {
        let dst = crate::fake().alias(dst as usize);
        // SAFETY: the front passes a live stream handle.
        let stream = unsafe { stream_ref(stream) };
        touch(stream.device)?;
        stream.enqueue(crate::stream::timed(Op::Set {
            dst: SendPtr(dst as *mut c_void),
            value: value as u8,
            len: bytes,
        }));
        Ok(())
    })
}

pub(super) unsafe extern "C" fn get_stats(device: c_int, stats: *mut xdal_mem_stats_t) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        let value = crate::fake().device(device as usize).stats();
        // SAFETY: the front passes a struct of at least `struct_size` bytes.
        unsafe { xdal_abi::write_sized(stats, &value) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn reset_peak_stats(device: c_int) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        crate::fake().device(device as usize).reset_peak();
        Ok(())
    })
}

pub(super) unsafe extern "C" fn empty_cache(device: c_int) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        crate::fake().device(device as usize).empty_cache();
        Ok(())
    })
}

pub(super) unsafe extern "C" fn address_get_device(ptr: *const c_void, device: *mut c_int) -> xdal_status_raw {
    entry(|| {
        let owner = crate::fake().devices.iter().position(|d| d.region.contains(ptr as usize));
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(device, owner.map_or(-1, |i| i as c_int)) }
    })
}
