//! Device entries.
use crate::error::{entry, failure};
use std::ffi::c_int;
use xdal_abi::*;

/// The first entry the front calls: it opens the runtime and finds the
/// devices; a start that failed is `XDAL_ERROR_BACKEND_UNAVAILABLE` with
/// what is missing.
pub(super) unsafe extern "C" fn get_count(count: *mut c_int) -> xdal_status_raw {
    entry(|| {
        let cl = crate::started().map_err(|why| failure!(XDAL_ERROR_BACKEND_UNAVAILABLE, "{why}"))?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { count.write(cl.devices.len() as c_int) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn get_properties(device: c_int, props: *mut xdal_device_properties_t) -> xdal_status_raw {
    entry(|| {
        let p = &crate::opencl().device(device as usize).properties;
        let clamp = |n: usize| n.min(u32::MAX as usize) as u32;
        let mut value = xdal_device_properties_t {
            struct_size: std::mem::size_of::<xdal_device_properties_t>(),
            name: [0; 256],
            total_memory: p.global_memory,
            compute_units: p.compute_units,
            max_threads_per_block: clamp(p.max_work_group),
            max_block_dim: p.max_work_item_sizes.map(clamp),
            // OpenCL bounds the global size by size_t only; these are
            // CUDA's grid limits, which xdal's callers size grids for.
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
            shared_mem_per_block: p.local_memory,
            warp_size: 1,
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
    entry(|| crate::opencl().device(device as usize).synchronize())
}

pub(super) unsafe extern "C" fn can_access_peer(device: c_int, peer: c_int, can_access: *mut c_int) -> xdal_status_raw {
    // Every device's memory is SVM of one context: each reaches the
    // others'; a device is not its own peer, as on CUDA.
    entry(|| {
        // SAFETY: the front passes a valid output pointer.
        unsafe { can_access.write(c_int::from(device != peer)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn stream_priority_range(
    _device: c_int,
    least: *mut c_int,
    greatest: *mut c_int,
) -> xdal_status_raw {
    entry(|| {
        let (low, high) = crate::device::priority_range(&crate::opencl().devices);
        // SAFETY: the front passes valid output pointers.
        unsafe {
            least.write(low);
            greatest.write(high);
        }
        Ok(())
    })
}
