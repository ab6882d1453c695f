// Errors and devices: xdal statuses as c10 errors, the device count, and
// the calling thread's current device, which is xdal's own (per thread,
// like PyTorch's).
#include "xdal_torch.h"

#include <algorithm>

namespace torch_xdal {

// ---------------------------------------------------------------- errors

std::string last_error_message() {
  char buf[1024];
  size_t needed = 0;
  if (xdal_get_last_error_message(buf, sizeof buf, &needed) != XDAL_SUCCESS) return "";
  return buf;
}

void raise(xdal_status_t status, const char* call) {
  std::string msg = std::string("xdal: ") + call + " failed: " + xdal_status_string(status) +
                    " (" + last_error_message() + ")";
  if (status == XDAL_ERROR_OUT_OF_MEMORY) {
    C10_THROW_ERROR(OutOfMemoryError, msg);
  }
  C10_THROW_ERROR(Error, msg);
}

// ---------------------------------------------------------------- devices

c10::DeviceIndex device_count() noexcept {
  static const c10::DeviceIndex count = [] {
    int n = 0;
    if (xdal_device_get_count(&n) != XDAL_SUCCESS) return c10::DeviceIndex(0);
    return c10::DeviceIndex(std::min(n, XDAL_MAX_DEVICES));
  }();
  return count;
}

void check_device(c10::DeviceIndex device) {
  TORCH_CHECK(device >= 0 && device < device_count(), "xdal: device index ", int(device),
              " is out of range [0, ", int(device_count()), ")");
}

c10::DeviceIndex current_device() {
  int d = 0;
  TX_CHECK(xdal_device_get(&d));
  return c10::DeviceIndex(d);
}

void set_device(c10::DeviceIndex device) {
  check_device(device);
  TX_CHECK(xdal_device_set(device));
}

c10::DeviceIndex exchange_device(c10::DeviceIndex device) {
  c10::DeviceIndex previous = current_device();
  if (device != previous) set_device(device);
  return previous;
}

c10::DeviceIndex resolve_device(c10::DeviceIndex device) {
  return device < 0 ? current_device() : device;
}

DeviceSwitch::DeviceSwitch(c10::DeviceIndex device) {
  int current = 0;
  TX_CHECK(xdal_device_get(&current));
  if (device >= 0 && device != current) {
    TX_CHECK(xdal_device_set(device));
    previous_ = current;
  }
}

DeviceSwitch::~DeviceSwitch() {
  if (previous_ >= 0) xdal_device_set(previous_);
}

}  // namespace torch_xdal
