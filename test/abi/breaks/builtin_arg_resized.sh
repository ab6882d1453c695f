# One argument of a built-in kernel resized (fill's count from 8 to 4
# bytes): launches built against the baseline pass 8 and get
# XDAL_ERROR_INVALID_VALUE.
description="built-in fill_<t>'s element count made 4 bytes"
outcome=fail
expect='built-in kernel `fill_f32` takes arguments of [8, 4, 4] bytes'
apply() {
  subst backends/fake/src/builtin/mod.rs '(format!\("fill_\{t\}"\), elementwise::fill_kernel::<E>, &\[PTR, )U64(, scalar\])' '$14$2'
}
