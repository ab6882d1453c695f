# The ABI major raised (with the library version, so the SONAME follows)
# and a function removed: with no baseline of the new major, the check must
# compare with the last baseline of the major before it and fail, naming the
# break as the new major's and asking for its release (new SONAME, first
# baseline frozen), instead of finding nothing to compare against.
description="ABI major raised to 2 (SONAME libxdal.so.2) and xdal_mem_empty_cache removed"
outcome=fail
expect='BREAK  (major) symbol `xdal_mem_empty_cache` removed'
apply() {
  subst abi/src/version.rs 'XDAL_ABI_VERSION_MAJOR: u32 = 1;' 'XDAL_ABI_VERSION_MAJOR: u32 = 2;'
  subst abi/src/version.rs 'XDAL_VERSION_MAJOR: u32 = 1;' 'XDAL_VERSION_MAJOR: u32 = 2;'
  subst Cargo.toml '(\n\[workspace\.package\]\nversion = )"1\.(\d+)\.(\d+)"' '$1"2.$2.$3"'
  subst Cargo.lock '(\nname = "xdal[a-z-]*"\nversion = )"1\.(\d+)\.(\d+)"' '$1"2.$2.$3"'
  subst src/api/memory.rs '#\[(?:unsafe\()?no_mangle\)?\]\s*\n(\s*pub (?:unsafe )?extern "C" fn xdal_mem_empty_cache\b)' '$1'
}
