# write_sized made to write the whole struct, whatever the caller's
# struct_size: a caller with a smaller struct (one built against 1.0 passes
# a 56-byte xdal_mem_stats_t) has the bytes past it overwritten. No header
# or layout changes; the struct_size probe, run as a caller of every
# baseline, names it.
description="write_sized writes the whole struct, ignoring the caller's struct_size"
outcome=fail
expect='struct_size rule, as a caller built against 1.2: xdal_device_get_properties with xdal_device_properties_t.struct_size 8 wrote byte 8'
apply() {
  subst abi/src/extensible.rs 'let len = caller_size\.min\(core::mem::size_of::<T>\(\)\);' 'let len = core::mem::size_of::<T>(); let _ = caller_size;'
}
