//! Device entries.
use crate::error::{entry, failure};
use std::ffi::c_int;
use xdal_abi::*;

/// The first entry the front calls: it opens the driver and finds the
/// devices; a start that failed is `XDAL_ERROR_BACKEND_UNAVAILABLE` with
/// what is missing.
pub(super) unsafe extern "C" fn get_count(count: *mut c_int) -> xdal_status_raw {
    entry(|| {
        let cuda = crate::started().map_err(|why| failure!(XDAL_ERROR_BACKEND_UNAVAILABLE, "{why}"))?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { count.write(cuda.devices.len() as c_int) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn get_properties(device: c_int, props: *mut xdal_device_properties_t) -> xdal_status_raw {
    entry(|| {
        let p = &crate::cuda().device(device as usize).properties;
        let mut value = xdal_device_properties_t {
            struct_size: std::mem::size_of::<xdal_device_properties_t>(),
            name: [0; 256],
            total_memory: p.total_memory,
            compute_units: p.compute_units,
            max_threads_per_block: p.max_threads_per_block,
            max_block_dim: p.max_block_dim,
            max_grid_dim: p.max_grid_dim,
            shared_mem_per_block: p.shared_mem_per_block,
            warp_size: p.warp_size,
            dtype_mask: crate::builtin::dtype_mask(),
            is_simulated: 0,
        };
        for (dst, src) in value.name.iter_mut().take(255).zip(p.name.bytes()) {
            *dst = src as std::ffi::c_char;
        }
        // SAFETY: the front passes a struct of at least `struct_size` bytes.
        unsafe { xdal_abi::write_sized(props, &value) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn synchronize(device: c_int) -> xdal_status_raw {
    entry(|| crate::cuda().device(device as usize).synchronize())
}

pub(super) unsafe extern "C" fn can_access_peer(device: c_int, peer: c_int, can_access: *mut c_int) -> xdal_status_raw {
    entry(|| {
        // Access enabled at start; a device is not its own peer, as on CUDA.
        let can = crate::cuda().device(device as usize).peers[peer as usize];
        // SAFETY: the front passes a valid output pointer.
        unsafe { can_access.write(c_int::from(can)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn stream_priority_range(
    device: c_int,
    least: *mut c_int,
    greatest: *mut c_int,
) -> xdal_status_raw {
    entry(|| {
        let (low, high) = crate::cuda().device(device as usize).priorities;
        // SAFETY: the front passes valid output pointers.
        unsafe {
            least.write(low);
            greatest.write(high);
        }
        Ok(())
    })
}

pub(super) unsafe extern "C" fn mem_get_info(device: c_int, free: *mut usize, total: *mut usize) -> xdal_status_raw {
    entry(|| {
        let (f, t) = crate::memory::info(device as usize)?;
        // SAFETY: the front passes valid output pointers.
        unsafe {
            free.write(f);
            total.write(t);
        }
        Ok(())
    })
}
