# A built-in kernel family renamed in the reference backend: programs built
# against the baseline look up fill_<t> and get XDAL_ERROR_NOT_FOUND. The
# catalogue is recorded in the baseline from the library's manifest.
description="built-in fill_<t> renamed to set_<t> in the fake backend"
outcome=fail
expect='built-in kernel `fill_f32` removed (or renamed)'
apply() {
  subst backends/fake/src/builtin/mod.rs 'format!\("fill_\{t\}"\)' 'format!("set_{t}")'
}
