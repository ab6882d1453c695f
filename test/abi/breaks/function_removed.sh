# A function removed: programs built against the baseline that call it no
# longer load (unresolved symbol).
description="xdal_mem_empty_cache no longer exported"
outcome=fail
expect='symbol `xdal_mem_empty_cache` removed from the library'
apply() {
  subst src/api/memory.rs '#\[(?:unsafe\()?no_mangle\)?\]\s*\n(\s*pub (?:unsafe )?extern "C" fn xdal_mem_empty_cache\b)' '$1'
}
