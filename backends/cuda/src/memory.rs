//! Device memory, pinned host memory, copies and fills.
//!
//! Synchronous copies and fills run on the driver's legacy stream of the
//! current context and wait for it: the front has ordered them after the
//! device's default stream, and the backend's own streams are non-blocking,
//! so the legacy stream holds nothing else. The driver leaves copies between
//! overlapping ranges undefined while xdal gives them memmove's result: they
//! are split into disjoint pieces, or staged through a buffer
//! (xdal-backend-support's `overlap`).
use crate::device::{current_or_first, Device};
use crate::driver::{
    CUdeviceptr, CUstream, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE, CU_MEMORYTYPE_DEVICE,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
};
use crate::error::{check, failure, CuResult, Failure};
use crate::stream::Stream;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;
use xdal_backend_support::overlap::{self, Move};

/// The legacy default stream (the NULL stream, with the entry points
/// `cuGetProcAddress` gave for legacy-stream use).
const LEGACY_STREAM: CUstream = std::ptr::null_mut();

fn address(ptr: *const c_void) -> CUdeviceptr {
    ptr as usize as CUdeviceptr
}

pub(crate) fn alloc(device: usize, size: usize) -> CuResult<*mut c_void> {
    let dev = crate::cuda().device(device);
    dev.enter()?;
    let mut ptr: CUdeviceptr = 0;
    // SAFETY: a valid output; the device's context is current.
    let code = unsafe { (crate::api().mem_alloc)(&mut ptr, size) };
    dev.check("cuMemAlloc_v2", code).map_err(|f| with_device(f, dev, size))?;
    seen(ptr, size, device);
    Ok(ptr as usize as *mut c_void)
}

/// An allocation's failure with the device and size in its message. A
/// size the driver calls invalid (it takes any other) is one it cannot
/// satisfy: out of memory, as xdal reports it.
fn with_device(failure: Failure, dev: &Device, size: usize) -> Failure {
    let mut failure = invalid_size_is_oom(failure);
    failure.message = format!(
        "{} ({size} bytes on device {}, {}, of {} bytes)",
        failure.message, dev.index, dev.properties.name, dev.properties.total_memory
    );
    failure
}

fn invalid_size_is_oom(mut failure: Failure) -> Failure {
    if failure.status == xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE {
        failure.status = xdal_abi::xdal_status::XDAL_ERROR_OUT_OF_MEMORY;
    }
    failure
}

pub(crate) fn free(device: usize, ptr: *mut c_void) -> CuResult<()> {
    let dev = crate::cuda().device(device);
    dev.enter()?;
    // SAFETY: the front passes a live allocation's base, after the device's
    // pending work.
    dev.check("cuMemFree_v2", unsafe { (crate::api().mem_free)(address(ptr)) })
}

/// Stream-ordered allocation from the device's default memory pool.
pub(crate) fn alloc_async(device: usize, size: usize, stream: &Stream) -> CuResult<*mut c_void> {
    let dev = crate::cuda().device(device);
    if !dev.properties.memory_pools {
        return Err(failure!(
            XDAL_ERROR_NOT_SUPPORTED,
            "device {device} ({}) has no stream-ordered memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is \
             0): allocate with xdal_malloc",
            dev.properties.name
        ));
    }
    stream.enter()?;
    let mut ptr: CUdeviceptr = 0;
    // SAFETY: a valid output; a live stream of the current context.
    let code = unsafe { (crate::api().mem_alloc_async)(&mut ptr, size, stream.handle) };
    stream.check("cuMemAllocAsync", code).map_err(|f| with_device(f, dev, size))?;
    seen(ptr, size, device);
    Ok(ptr as usize as *mut c_void)
}

pub(crate) fn free_async(ptr: *mut c_void, stream: &Stream) -> CuResult<()> {
    stream.enter()?;
    // SAFETY: a block from cuMemAllocAsync (the front checks); the free
    // happens in stream order.
    stream.check("cuMemFreeAsync", unsafe { (crate::api().mem_free_async)(address(ptr), stream.handle) })
}

/// Pinned host memory, portable (pinned for every context) and mapped
/// (kernels may read and write it through its host address, which unified
/// addressing makes its device address too).
pub(crate) fn alloc_host(size: usize) -> CuResult<*mut c_void> {
    current_or_first()?;
    let mut ptr: *mut c_void = std::ptr::null_mut();
    let flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
    // SAFETY: a valid output; a context is current.
    let code = unsafe { (crate::api().mem_host_alloc)(&mut ptr, size, flags) };
    check("cuMemHostAlloc", code).map_err(|f| {
        let mut f = invalid_size_is_oom(f);
        f.message = format!("{} ({size} bytes of pinned host memory)", f.message);
        f
    })?;
    Ok(ptr)
}

pub(crate) fn free_host(ptr: *mut c_void) -> CuResult<()> {
    current_or_first()?;
    // SAFETY: memory from cuMemHostAlloc (the front checks), no longer used.
    check("cuMemFreeHost", unsafe { (crate::api().mem_free_host)(ptr) })
}

/// The device whose memory `ptr` is in, or None for host memory and
/// addresses no device allocation of this backend ever held. The driver
/// knows live allocations only; a freed one's address is still a device
/// address, which the host must not dereference, so the ranges this
/// backend ever allocated answer for it.
pub(crate) fn device_of(ptr: *const c_void) -> CuResult<Option<usize>> {
    let mut memory_type: c_uint = 0;
    let mut ordinal: c_int = -1;
    let attributes = [CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL];
    let mut data = [(&mut memory_type as *mut c_uint).cast::<c_void>(), (&mut ordinal as *mut c_int).cast::<c_void>()];
    // SAFETY: two attributes with an output of each one's type. An address
    // the driver does not know is no error: the outputs keep their defaults.
    let code =
        unsafe { (crate::api().pointer_get_attributes)(2, attributes.as_ptr(), data.as_mut_ptr(), address(ptr)) };
    check("cuPointerGetAttributes", code)?;
    let devices = crate::cuda().devices.len();
    if memory_type == CU_MEMORYTYPE_DEVICE && (0..devices as c_int).contains(&ordinal) {
        return Ok(Some(ordinal as usize));
    }
    if memory_type != 0 {
        // Memory the driver knows as the host's (pinned or registered).
        return Ok(None);
    }
    Ok(SEEN.lock().unwrap_or_else(|p| p.into_inner()).device_of(ptr as usize))
}

/// Every address range a device allocation of this backend ever held.
static SEEN: Mutex<Ranges> = Mutex::new(Ranges(BTreeMap::new()));

fn seen(ptr: CUdeviceptr, size: usize, device: usize) {
    SEEN.lock().unwrap_or_else(|p| p.into_inner()).insert(ptr as usize, size, device);
}

/// Disjoint address ranges, each of one device: start -> (end, device).
/// Overlapping or touching ranges of one device merge, so an allocator
/// that reuses addresses keeps the map small.
struct Ranges(BTreeMap<usize, (usize, usize)>);

impl Ranges {
    fn insert(&mut self, start: usize, size: usize, device: usize) {
        let (mut start, mut end) = (start, start.saturating_add(size));
        // Ranges that overlap or touch [start, end): those starting at or
        // before `end` whose end reaches `start`.
        let touching: Vec<usize> =
            self.0.range(..=end).rev().take_while(|(_, &(e, _))| e >= start).map(|(&s, _)| s).collect();
        for s in touching {
            let (e, d) = self.0[&s];
            if d == device {
                self.0.remove(&s);
                start = start.min(s);
                end = end.max(e);
            } else if s < end && e > start {
                // Another device's range here is stale (the address space
                // is one): the new allocation replaces it.
                self.0.remove(&s);
                if s < start {
                    self.0.insert(s, (start, d));
                }
                if e > end {
                    self.0.insert(end, (e, d));
                }
            }
        }
        self.0.insert(start, (end, device));
    }

    fn device_of(&self, addr: usize) -> Option<usize> {
        let (_, &(end, device)) = self.0.range(..=addr).next_back()?;
        (addr < end).then_some(device)
    }
}

/// The device whose context runs a synchronous operation on `addresses`:
/// that of the first one in device memory (the driver reaches another
/// device's memory from a context only through peer access, which not
/// every pair has), else the current one.
fn device_for(addresses: &[*const c_void]) -> CuResult<&'static Device> {
    for &address in addresses {
        if let Some(device) = device_of(address)? {
            let dev = crate::cuda().device(device);
            dev.enter()?;
            return Ok(dev);
        }
    }
    current_or_first()
}

/// A synchronous copy (not host to host); memmove's result.
pub(crate) fn copy(dst: *mut c_void, src: *const c_void, bytes: usize) -> CuResult<()> {
    let dev = device_for(&[dst.cast_const(), src])?;
    let api = crate::api();
    let copy = |dst: usize, src: usize, bytes: usize| {
        // SAFETY: the front checked both ranges; the pieces lie within them
        // or in the staging buffer, and never overlap.
        dev.check("cuMemcpy", unsafe { (api.memcpy)(dst as CUdeviceptr, src as CUdeviceptr, bytes) })
    };
    let (dst, src) = (dst as usize, src as usize);
    match overlap::plan(dst, src, bytes) {
        Move::Nothing => return Ok(()),
        Move::Direct => copy(dst, src, bytes)?,
        Move::Pieces(pieces) => pieces.iter().try_for_each(|p| copy(p.dst, p.src, p.bytes))?,
        Move::Staged => {
            let staging = alloc(dev.index, bytes).map_err(|f| staging_refused(f, dst, src, bytes))?;
            let staged = copy(staging as usize, src, bytes)
                .and_then(|()| copy(dst, staging as usize, bytes))
                .and_then(|()| wait_legacy(dev));
            // Freed once the copies that use it are done (or failed).
            let freed = free(dev.index, staging);
            return staged.and(freed);
        }
    }
    wait_legacy(dev)
}

fn staging_refused(mut f: Failure, dst: usize, src: usize, bytes: usize) -> Failure {
    f.message = format!(
        "a copy of {bytes} bytes between overlapping ranges {} bytes apart needs a staging buffer of its size: {}",
        dst.abs_diff(src),
        f.message
    );
    f
}

/// Waits for the legacy stream of the current context (`dev`'s): a copy
/// between device ranges, or from pageable memory, may still be running
/// when cuMemcpy returns.
fn wait_legacy(dev: &Device) -> CuResult<()> {
    // SAFETY: the legacy stream of the current context.
    dev.check("cuStreamSynchronize", unsafe { (crate::api().stream_synchronize)(LEGACY_STREAM) })
}

/// A copy enqueued on `stream`; memmove's result.
pub(crate) fn copy_async(dst: *mut c_void, src: *const c_void, bytes: usize, stream: &Stream) -> CuResult<()> {
    stream.enter()?;
    let api = crate::api();
    let copy = |dst: usize, src: usize, bytes: usize| {
        // SAFETY: the front checked both ranges; the caller keeps them
        // valid until the copy has run, as for any asynchronous copy.
        let code = unsafe { (api.memcpy_async)(dst as CUdeviceptr, src as CUdeviceptr, bytes, stream.handle) };
        stream.check("cuMemcpyAsync", code)
    };
    let (dst, src) = (dst as usize, src as usize);
    match overlap::plan(dst, src, bytes) {
        Move::Nothing => Ok(()),
        Move::Direct => copy(dst, src, bytes),
        Move::Pieces(pieces) => pieces.iter().try_for_each(|p| copy(p.dst, p.src, p.bytes)),
        Move::Staged => {
            // A stream-ordered buffer where the device has pools; else a
            // plain one, freed once the stream is done with it.
            let dev = crate::cuda().device(stream.device);
            if dev.properties.memory_pools {
                let staging =
                    alloc_async(stream.device, bytes, stream).map_err(|f| staging_refused(f, dst, src, bytes))?;
                let staged = copy(staging as usize, src, bytes).and_then(|()| copy(dst, staging as usize, bytes));
                let freed = free_async(staging, stream);
                staged.and(freed)
            } else {
                let staging = alloc(stream.device, bytes).map_err(|f| staging_refused(f, dst, src, bytes))?;
                let staged = copy(staging as usize, src, bytes).and_then(|()| copy(dst, staging as usize, bytes));
                let waited = stream.synchronize();
                staged.and(waited).and(free(stream.device, staging))
            }
        }
    }
}

/// A synchronous copy between two devices' memory.
pub(crate) fn copy_peer(
    dst: *mut c_void,
    dst_device: usize,
    src: *const c_void,
    src_device: usize,
    bytes: usize,
) -> CuResult<()> {
    if dst_device == src_device {
        // One device's ranges may overlap: the plain copy handles that.
        return copy(dst, src, bytes);
    }
    let cuda = crate::cuda();
    let (to, from) = (cuda.device(dst_device), cuda.device(src_device));
    to.enter()?;
    from.enter()?;
    // SAFETY: the front checked both ranges; the contexts are the devices'
    // primary contexts; the legacy stream of the current context (`from`'s).
    let code = unsafe {
        (crate::api().memcpy_peer_async)(address(dst), to.context.0, address(src), from.context.0, bytes, LEGACY_STREAM)
    };
    from.check("cuMemcpyPeerAsync", code)?;
    wait_legacy(from)
}

pub(crate) fn set(dst: *mut c_void, value: u8, bytes: usize) -> CuResult<()> {
    let dev = device_for(&[dst.cast_const()])?;
    // SAFETY: the front checked the range.
    dev.check("cuMemsetD8_v2", unsafe { (crate::api().memset_d8)(address(dst), value, bytes) })?;
    // A fill of device memory may still be running when cuMemsetD8 returns.
    wait_legacy(dev)
}

pub(crate) fn set_async(dst: *mut c_void, value: u8, bytes: usize, stream: &Stream) -> CuResult<()> {
    stream.enter()?;
    // SAFETY: the front checked the range; the memory stays allocated until
    // the stream's work is done (xdal_free waits for it).
    let code = unsafe { (crate::api().memset_d8_async)(address(dst), value, bytes, stream.handle) };
    stream.check("cuMemsetD8Async", code)
}

/// Free and total bytes of `device`.
pub(crate) fn info(device: usize) -> CuResult<(usize, usize)> {
    let dev = crate::cuda().device(device);
    dev.enter()?;
    let (mut free, mut total) = (0, 0);
    // SAFETY: valid outputs; the device's context is current.
    dev.check("cuMemGetInfo_v2", unsafe { (crate::api().mem_get_info)(&mut free, &mut total) })?;
    Ok((free, total))
}

#[cfg(test)]
mod tests {
    use super::Ranges;
    use std::collections::BTreeMap;

    #[test]
    fn ranges_remember_each_device_and_merge_reused_addresses() {
        let mut r = Ranges(BTreeMap::new());
        r.insert(0x1000, 0x100, 0);
        r.insert(0x1100, 0x100, 0);
        r.insert(0x1080, 0x10, 0);
        assert_eq!(r.0.len(), 1, "touching and overlapping ranges of one device merge");
        assert_eq!(r.device_of(0x1000), Some(0));
        assert_eq!(r.device_of(0x11ff), Some(0));
        assert_eq!(r.device_of(0x1200), None);
        assert_eq!(r.device_of(0xfff), None);
        r.insert(0x9000, 0x1000, 1);
        assert_eq!(r.device_of(0x9800), Some(1));
        // Device 1 now holds part of device 0's old range.
        r.insert(0x1040, 0x40, 1);
        assert_eq!(r.device_of(0x1000), Some(0));
        assert_eq!(r.device_of(0x1050), Some(1));
        assert_eq!(r.device_of(0x1080), Some(0));
        assert_eq!(r.0.len(), 4);
    }
}
