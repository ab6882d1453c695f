# A new function: an addition, allowed in a minor release.
description="new exported function xdal_selftest_added"
outcome=pass
expect='new function `xdal_status_t xdal_selftest_added(int value)`'
apply() {
  cat >>src/lib.rs <<'RUST'

/// An addition made by the ABI self-test (test/abi/breaks).
#[no_mangle]
pub extern "C" fn xdal_selftest_added(value: std::ffi::c_int) -> xdal_abi::xdal_status_t {
    let _ = value;
    xdal_abi::xdal_status::XDAL_SUCCESS
}
RUST
}
