# An enum renumbered: a value inserted before the last one shifts it, so a
# binary built against the baseline means another thing by the same number.
description="XDAL_MEMORY_TYPE_MANAGED inserted before XDAL_MEMORY_TYPE_DEVICE, which moves to 3"
outcome=fail
expect='enum `xdal_memory_type`: `XDAL_MEMORY_TYPE_DEVICE` renumbered from 2 to 3'
apply() {
  subst abi/src/memory.rs '(\n(\s*)(/// Device memory[^\n]*\n\s*)?XDAL_MEMORY_TYPE_DEVICE = 2,)' \
    '\n$2/// Managed memory, migrated on demand.\n$2XDAL_MEMORY_TYPE_MANAGED = 2,\n$2$3XDAL_MEMORY_TYPE_DEVICE = 3,'
}
