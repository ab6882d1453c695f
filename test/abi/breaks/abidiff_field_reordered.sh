# Two fields of an extensible struct swapped (same types, so the size stays):
# the checker's own rules name it, and abidiff must too, on its own, so that
# it stays a second, independent check. Its suppressions for extensible
# structs cover fields appended past the baseline's size, and nothing else.
description="two fields of xdal_device_properties swapped (abidiff's own verdict)"
outcome=fail
expect='BREAK  abidiff reports'
apply() {
  subst abi/src/device.rs '(\n(\s*)/// Number of compute units[^\n]*\n\s*pub compute_units: u32,\n)(\s*/// Largest number of threads in one block[^\n]*\n\s*pub max_threads_per_block: u32,\n)' '\n$3$1'
}
