# A new entry that every backend must fill (the "pure virtual added to the
# allocator" kind of change): backends built against the baseline have no
# such entry, so a front that requires it refuses every one of them.
description="Required backend-table entry device_reset appended"
outcome=fail
expect='backend table `xdal_backend_v1`: new entry `device_reset` is Required'
apply() {
  subst abi/src/backend.rs '(?s)(pub struct xdal_backend_v1 \{.*?\n)\}' \
    '$1    /// Required. Resets `device` to its state at load.\n    pub device_reset: Option<unsafe extern "C" fn(device: c_int) -> xdal_status_raw>,\n}'
  subst_rs '(xdal_backend_v1(?:_t)? \{[^{}]*?\n)(\s*)\}' '$1$2    device_reset: None,\n$2}'
}
