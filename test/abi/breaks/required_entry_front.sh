# The front newly requires a table entry, with no change to any header (no
# "Required." mark): every backend built against the baseline that leaves
# it NULL is refused at load. The set the front requires is recorded in the
# baseline from the library's manifest.
description="the front's required list grows by mem_get_info (no header change)"
outcome=fail
expect='the front now requires backend-table entry `mem_get_info`'
apply() {
  subst src/backend.rs '(\n(\s*)\("mem_alloc", \|t\| t\.mem_alloc\.is_some\(\)\),\n)' \
    '$1$2("mem_get_info", |t| t.mem_get_info.is_some()),\n'
}
