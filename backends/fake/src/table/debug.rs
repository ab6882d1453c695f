//! Debugging entries: fault injection (faults.rs has the grammar).
use crate::error::{entry, failure};
use crate::faults::Spec;
use std::ffi::{c_char, CStr};
use xdal_abi::xdal_status_raw;

pub(super) unsafe extern "C" fn set_faults(spec: *const c_char) -> xdal_status_raw {
    entry(|| {
        let text = if spec.is_null() {
            String::new()
        } else {
            // SAFETY: the front passes NULL or a NUL-terminated string.
            unsafe { CStr::from_ptr(spec) }.to_string_lossy().into_owned()
        };
        let fake = crate::fake();
        let spec = Spec::parse(&text, fake.devices.len()).map_err(|why| failure!(XDAL_ERROR_INVALID_VALUE, "{why}"))?;
        fake.faults.install(spec);
        Ok(())
    })
}
