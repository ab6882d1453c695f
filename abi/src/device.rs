//! Device description.
use core::ffi::c_char;

/// The most devices the library shows: device indices run from 0 to
/// `XDAL_MAX_DEVICES - 1`, so a consumer may size per-device tables with
/// it. A backend that reports more has only its first `XDAL_MAX_DEVICES`
/// devices visible.
pub const XDAL_MAX_DEVICES: i32 = 64;

/// What a device is and can do. Extensible: the caller sets `struct_size`
/// to `sizeof(xdal_device_properties_t)` of the header it compiled against;
/// the library writes only the fields that fit in that size.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xdal_device_properties {
    /// Size of this struct as the caller knows it; set by the caller.
    pub struct_size: usize,
    /// NUL-terminated device name.
    pub name: [c_char; 256],
    /// Memory capacity in bytes.
    pub total_memory: u64,
    /// Number of compute units (on the fake backend: worker threads).
    pub compute_units: u32,
    /// Largest number of threads in one block (x * y * z).
    pub max_threads_per_block: u32,
    /// Largest block extent in each dimension.
    pub max_block_dim: [u32; 3],
    /// Largest grid extent in each dimension.
    pub max_grid_dim: [u32; 3],
    /// Largest shared memory one block may request, in bytes.
    pub shared_mem_per_block: u64,
    /// Threads that execute in lock step.
    pub warp_size: u32,
    /// Bit `1 << dtype` is set for each `xdal_dtype_t` that the backend's
    /// built-in kernels handle.
    pub dtype_mask: u64,
    /// 1 when the device is simulated (the fake backend), else 0.
    pub is_simulated: u32,
}

/// See `struct xdal_device_properties`.
pub type xdal_device_properties_t = xdal_device_properties;
