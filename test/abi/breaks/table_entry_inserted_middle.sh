# An entry inserted in the middle of the backend table: a backend built
# against the baseline has its functions at the old offsets, so the front
# calls the wrong function for every entry after the insertion.
description="backend-table entry mem_trim inserted before mem_free"
outcome=fail
expect='backend table `xdal_backend_v1`: entry `mem_trim` inserted in the middle (before `mem_free`)'
apply() {
  subst abi/src/backend.rs '(\n(\s*)pub mem_free: )' \
    '\n$2/// Returns unused memory of `device` to the system. Fallback: nothing to return.\n$2pub mem_trim: Option<unsafe extern "C" fn(device: c_int) -> xdal_status_raw>,$1'
  subst_rs '(\n(\s*)mem_free: )' '\n$2mem_trim: None,$1'
}
