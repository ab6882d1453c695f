//! Device operations: the backend's entry, or a fallback built on its
//! required entries.
use crate::backend::{call, call_or, Backend, DeviceIndex};
use crate::dispatch::stats;
use crate::error::XResult;
use crate::objects::STREAMS;
use std::ffi::c_int;
use xdal_abi::xdal_mem_stats_t;

/// Waits for every stream of `device`. Fallback: synchronize each stream
/// the front created there, the default stream included.
pub(crate) fn synchronize(backend: &'static Backend, device: c_int) -> XResult<()> {
    call_or!(backend, device_synchronize(device), synchronize_each_stream(backend, device))
}

fn synchronize_each_stream(backend: &'static Backend, device: c_int) -> XResult<()> {
    let mut first = Ok(());
    let streams = STREAMS.values().into_iter().filter(|s| s.device.get() == device);
    for stream in streams.chain(backend.existing_default_stream(device).cloned()) {
        let result = call!(backend, stream_synchronize(stream.native)).and(stream.fallback_error());
        first = first.and(result);
    }
    first
}

/// Whether `device` reaches `peer`'s memory directly. Fallback: no.
pub(crate) fn can_access_peer(backend: &'static Backend, device: c_int, peer: c_int) -> XResult<c_int> {
    let mut value = 0;
    call_or!(backend, device_can_access_peer(device, peer, &mut value), Ok(()))?;
    Ok(value)
}

/// Free and total bytes. Fallback: the capacity from the properties, minus
/// what the front saw allocated.
pub(crate) fn mem_info(backend: &'static Backend, device: DeviceIndex) -> XResult<(usize, usize)> {
    let (mut free, mut total) = (0, 0);
    call_or!(backend, mem_get_info(device.get(), &mut free, &mut total), {
        let capacity = backend.properties(device).total_memory;
        let used = stats::snapshot(device.get()).allocated_bytes;
        let bytes = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        (free, total) = (bytes(capacity.saturating_sub(used)), bytes(capacity));
        Ok(())
    })?;
    Ok((free, total))
}

/// Allocator statistics. Fallback: the front's own counts. A backend built
/// against 1.0 does not write `peak_reserved_bytes`: the front completes
/// it with a lower bound (`stats::complete_peak_reserved`).
pub(crate) fn mem_stats(backend: &'static Backend, device: c_int) -> XResult<xdal_mem_stats_t> {
    let mut value = xdal_mem_stats_t {
        struct_size: std::mem::size_of::<xdal_mem_stats_t>(),
        peak_reserved_bytes: stats::UNWRITTEN,
        ..Default::default()
    };
    call_or!(backend, mem_get_stats(device, &mut value), {
        value = stats::snapshot(device);
        Ok(())
    })?;
    if value.peak_reserved_bytes == stats::UNWRITTEN {
        stats::complete_peak_reserved(device, &mut value);
    }
    Ok(value)
}

/// Resets the peaks. Fallback: the front's own counts. The reservations
/// the front noted for a 1.0 backend's lower bound are forgotten either way.
pub(crate) fn reset_peak(backend: &'static Backend, device: c_int) -> XResult<()> {
    stats::reset_reserved_seen(device);
    call_or!(backend, mem_reset_peak_stats(device), {
        stats::reset_peak(device);
        Ok(())
    })
}

/// Releases cached memory. Fallback: nothing is cached.
pub(crate) fn empty_cache(backend: &'static Backend, device: c_int) -> XResult<()> {
    call_or!(backend, mem_empty_cache(device), Ok(()))
}
