//! Memory: pointer attributes, copy kinds and allocator statistics.
use core::ffi::{c_int, c_void};

/// What kind of memory a pointer refers to.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum xdal_memory_type {
    /// Not memory xdal allocated (ordinary host memory, or garbage).
    XDAL_MEMORY_TYPE_UNREGISTERED = 0,
    /// Pinned host memory from `xdal_malloc_host`.
    XDAL_MEMORY_TYPE_HOST = 1,
    /// Device memory from `xdal_malloc` or `xdal_malloc_async`.
    XDAL_MEMORY_TYPE_DEVICE = 2,
}
/// See `enum xdal_memory_type`.
pub type xdal_memory_type_t = xdal_memory_type;

/// What `xdal_pointer_get_attributes` reports. Extensible (`struct_size`).
///
/// cbindgen:field-names=[struct_size, type, device, base, size]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xdal_pointer_attributes {
    /// Size of this struct as the caller knows it; set by the caller.
    pub struct_size: usize,
    /// The kind of memory.
    pub type_: xdal_memory_type_t,
    /// The device that owns device memory; -1 for host or unregistered memory.
    pub device: c_int,
    /// Start of the allocation that contains the pointer; NULL if unregistered.
    pub base: *mut c_void,
    /// Size in bytes of that allocation; 0 if unregistered.
    pub size: usize,
}
/// See `struct xdal_pointer_attributes`.
pub type xdal_pointer_attributes_t = xdal_pointer_attributes;

/// The direction of a copy.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum xdal_memcpy_kind {
    /// Host to host.
    XDAL_MEMCPY_HOST_TO_HOST = 0,
    /// Host to device.
    XDAL_MEMCPY_HOST_TO_DEVICE = 1,
    /// Device to host.
    XDAL_MEMCPY_DEVICE_TO_HOST = 2,
    /// Device to device (either device).
    XDAL_MEMCPY_DEVICE_TO_DEVICE = 3,
    /// Inferred from the pointers.
    XDAL_MEMCPY_DEFAULT = 4,
}
/// See `enum xdal_memcpy_kind`.
pub type xdal_memcpy_kind_t = xdal_memcpy_kind;
/// A copy kind as it crosses the ABI from C: any value, checked before use.
/// The headers spell it `xdal_memcpy_kind_t`.
pub type xdal_memcpy_kind_raw = u32;

impl xdal_memcpy_kind {
    /// The kind with raw value `raw`, if there is one.
    pub fn from_raw(raw: xdal_memcpy_kind_raw) -> Option<Self> {
        Some(match raw {
            0 => Self::XDAL_MEMCPY_HOST_TO_HOST,
            1 => Self::XDAL_MEMCPY_HOST_TO_DEVICE,
            2 => Self::XDAL_MEMCPY_DEVICE_TO_HOST,
            3 => Self::XDAL_MEMCPY_DEVICE_TO_DEVICE,
            4 => Self::XDAL_MEMCPY_DEFAULT,
            _ => return None,
        })
    }
}

/// Allocator statistics of one device. Extensible (`struct_size`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct xdal_mem_stats {
    /// Size of this struct as the caller knows it; set by the caller.
    pub struct_size: usize,
    /// Bytes in live allocations, as requested by the callers.
    pub allocated_bytes: u64,
    /// Bytes the allocator holds from the device: live blocks plus blocks
    /// cached in the stream-ordered pool.
    pub reserved_bytes: u64,
    /// Highest `allocated_bytes` since creation or the last
    /// `xdal_mem_reset_peak_stats`.
    pub peak_allocated_bytes: u64,
    /// Successful allocations, plain and stream-ordered.
    pub num_allocs: u64,
    /// Frees, plain and stream-ordered.
    pub num_frees: u64,
    /// Allocations refused with `XDAL_ERROR_OUT_OF_MEMORY`.
    pub num_ooms: u64,
    /// Since 1.1. Highest `reserved_bytes` since the device started or the
    /// last `xdal_mem_reset_peak_stats`, which resets it to the current
    /// `reserved_bytes`. A caller whose `struct_size` ends before this field
    /// (built against 1.0) does not get it written. Under a backend built
    /// against 1.0, which does not know the field, the library reports a
    /// lower bound: the highest of the current `reserved_bytes`,
    /// `peak_allocated_bytes` and every `reserved_bytes` it has reported
    /// for the device since the last reset.
    pub peak_reserved_bytes: u64,
}
/// See `struct xdal_mem_stats`.
pub type xdal_mem_stats_t = xdal_mem_stats;
