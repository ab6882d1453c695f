//! The checks every backend's `xdal_backend_get_v1` makes before handing
//! out its table.
use xdal_abi::{xdal_backend_v1_t, xdal_status, xdal_status_raw, XDAL_ABI_VERSION_MAJOR};

/// Writes `table` to `out` for a front of the same ABI major:
/// `XDAL_ERROR_NULL_POINTER` for a NULL `out`, `XDAL_ERROR_VERSION_MISMATCH`
/// for another major. The backend starts later, at the front's first
/// `device_get_count`, which reports a start that failed.
///
/// # Safety
/// `out` must be NULL or point to writable storage for one pointer.
pub unsafe fn hand_out_table(
    front_abi_major: u32,
    out: *mut *const xdal_backend_v1_t,
    table: &'static xdal_backend_v1_t,
) -> xdal_status_raw {
    if out.is_null() {
        return xdal_status::XDAL_ERROR_NULL_POINTER as xdal_status_raw;
    }
    if front_abi_major != XDAL_ABI_VERSION_MAJOR {
        return xdal_status::XDAL_ERROR_VERSION_MISMATCH as xdal_status_raw;
    }
    // SAFETY: checked non-NULL above; the caller provides the storage.
    unsafe { *out = table };
    xdal_status::XDAL_SUCCESS as xdal_status_raw
}
