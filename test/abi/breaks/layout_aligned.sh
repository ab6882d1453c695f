# A layout cbindgen cannot express: xdal_dim3 aligned to 16 bytes. The
# headers lose its definition (and no longer compile), while the library
# passes and embeds a 16-byte dim3: binaries built against the baseline
# compute wrong results. The break is named from the library's own layouts,
# never a tool error.
description="#[repr(C, align(16))] on xdal_dim3"
outcome=fail
expect='struct `xdal_dim3` as the library lays it out: alignment changed from 4 to 16 bytes'
apply() {
  subst abi/src/kernel.rs '#\[repr\(C\)\]\n(#\[derive\([^\n]*\)\]\npub struct xdal_dim3 )' '#[repr(C, align(16))]\n$1'
}
