# An optional entry appended to the backend table: backends built against
# the baseline declare a smaller struct_size, and the front treats the new
# entry as NULL (a fallback or XDAL_ERROR_NOT_SUPPORTED).
description="optional backend-table entry device_reset appended"
outcome=pass
expect='backend table `xdal_backend_v1`: entry `device_reset` appended'
apply() {
  subst abi/src/backend.rs '(?s)(pub struct xdal_backend_v1 \{.*?\n)\}' \
    '$1    /// Resets `device` to its state at load. Fallback: XDAL_ERROR_NOT_SUPPORTED.\n    pub device_reset: Option<unsafe extern "C" fn(device: c_int) -> xdal_status_raw>,\n}'
  subst_rs '(xdal_backend_v1(?:_t)? \{[^{}]*?\n)(\s*)\}' '$1$2    device_reset: None,\n$2}'
}
