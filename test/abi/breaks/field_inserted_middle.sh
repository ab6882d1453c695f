# A field inserted in the middle of a struct: every field after it moves, so
# a consumer built against the baseline reads and writes the wrong bytes.
description="field inserted in the middle of xdal_pointer_attributes"
outcome=fail
expect='struct `xdal_pointer_attributes`: field `flags` inserted in the middle (before `device`)'
apply() {
  subst abi/src/memory.rs '(\n(\s*)pub type_: xdal_memory_type_t,\n)' '$1$2/// Flags of the allocation.\n$2pub flags: u32,\n'
  subst abi/src/memory.rs 'field-names=\[struct_size, type, device' 'field-names=[struct_size, type, flags, device'
  subst_rs '(\n(\s*)type_: xdal_memory_type::XDAL_MEMORY_TYPE_UNREGISTERED,\n)' '$1$2flags: 0,\n'
}
