# An `int` parameter widened to `int64_t` (PyTorch's int -> DeviceIndex
# kind of change): callers built against the baseline pass 32 bits where 64
# are read.
description="int parameter of xdal_device_set widened to int64_t"
outcome=fail
expect='parameter 1 (`device`) of `xdal_device_set` changed type from `int` to `int64_t`'
apply() {
  subst src/api/device.rs 'fn xdal_device_set\(device: c_int\) -> xdal_status_t \{\n' \
    'fn xdal_device_set(device: i64) -> xdal_status_t {\n    let device = device as c_int;\n'
}
