//! Debugging aids for consumers' tests: fault injection.
use crate::backend::{backend, call_or};
use crate::error::{boundary, err};
use std::ffi::c_char;
use xdal_abi::*;

/// Installs a fault-injection spec on backends that have fault injection
/// (the fake backend: nth device allocation out of memory, nth kernel
/// launch or copy failing, a device lost after n calls; the grammar is in
/// the README, the same as `XDAL_FAKE_FAULTS`), replacing the previous one
/// and restarting its counts; NULL or "" clears it. A malformed spec is
/// `XDAL_ERROR_INVALID_VALUE`, with a message pointing at the bad clause,
/// and leaves the previous spec in place. Backends without fault injection
/// return `XDAL_ERROR_NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn xdal_debug_set_faults(spec: *const c_char) -> xdal_status_t {
    boundary(c"xdal_debug_set_faults", || {
        let backend = backend()?;
        call_or!(
            backend,
            debug_set_faults(spec),
            Err(err!(XDAL_ERROR_NOT_SUPPORTED, "the {} backend has no fault injection", backend.name_str()))
        )
    })
}
