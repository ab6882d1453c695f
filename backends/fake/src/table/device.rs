//! Device entries.
use super::{touch, write_out};
use crate::error::{entry, failure};
use std::ffi::c_int;
use xdal_abi::*;

/// Priorities run from 0 (least urgent, the default) to -2 (most urgent).
pub(crate) const LEAST_PRIORITY: c_int = 0;
pub(crate) const GREATEST_PRIORITY: c_int = -2;

/// The first entry the front calls: it starts the simulation, and a start
/// that failed is `XDAL_ERROR_BACKEND_UNAVAILABLE` with the reason.
pub(super) unsafe extern "C" fn get_count(count: *mut c_int) -> xdal_status_raw {
    entry(|| {
        let fake = crate::started().map_err(|why| failure!(XDAL_ERROR_BACKEND_UNAVAILABLE, "{why}"))?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(count, fake.devices.len() as c_int) }
    })
}

pub(super) unsafe extern "C" fn get_properties(device: c_int, props: *mut xdal_device_properties_t) -> xdal_status_raw {
    entry(|| {
        let fake = crate::fake();
        let dev = fake.device(device as usize);
        let mut value = xdal_device_properties_t {
            struct_size: std::mem::size_of::<xdal_device_properties_t>(),
            name: [0; 256],
            total_memory: dev.capacity as u64,
            compute_units: fake.executor.workers() as u32,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
            shared_mem_per_block: 48 << 10,
            warp_size: 32,
            dtype_mask: crate::builtin::dtype_mask(),
            is_simulated: 1,
        };
        let name = format!("xdal fake device {device}");
        for (dst, src) in value.name.iter_mut().zip(name.bytes()) {
            *dst = src as std::ffi::c_char;
        }
        // SAFETY: the front passes a struct of at least `struct_size` bytes.
        unsafe { xdal_abi::write_sized(props, &value) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn synchronize(device: c_int) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        crate::fake().device(device as usize).synchronize()
    })
}

pub(super) unsafe extern "C" fn get_stream_priority_range(
    _device: c_int,
    least: *mut c_int,
    greatest: *mut c_int,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes valid output pointers.
        unsafe {
            write_out(least, LEAST_PRIORITY)?;
            write_out(greatest, GREATEST_PRIORITY)
        }
    })
}

pub(super) unsafe extern "C" fn can_access_peer(device: c_int, peer: c_int, can_access: *mut c_int) -> xdal_status_raw {
    // All fake devices live in one address space; a device is not its own
    // peer, as on CUDA.
    // SAFETY: the front passes a valid output pointer.
    entry(|| unsafe { write_out(can_access, c_int::from(device != peer)) })
}

pub(super) unsafe extern "C" fn mem_get_info(
    device: c_int,
    free_bytes: *mut usize,
    total_bytes: *mut usize,
) -> xdal_status_raw {
    entry(|| {
        touch(device as usize)?;
        let dev = crate::fake().device(device as usize);
        let free = dev
            .capacity
            .checked_sub(dev.reserved())
            .ok_or_else(|| failure!(XDAL_ERROR_INTERNAL, "device {device}: more reserved than its capacity"))?;
        // SAFETY: the front passes valid output pointers.
        unsafe {
            write_out(free_bytes, free)?;
            write_out(total_bytes, dev.capacity)
        }
    })
}
