# A new enum value at the end: an addition.
description="new value XDAL_MEMORY_TYPE_MANAGED = 3 appended to xdal_memory_type"
outcome=pass
expect='enum `xdal_memory_type`: new value `XDAL_MEMORY_TYPE_MANAGED` = 3'
apply() {
  subst abi/src/memory.rs '(?s)(pub enum xdal_memory_type \{.*?\n)\}' \
    '$1    /// Managed memory, migrated on demand.\n    XDAL_MEMORY_TYPE_MANAGED = 3,\n}'
}
