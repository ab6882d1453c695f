// Errors and devices: xdal statuses as c10 errors, the device count, and
// the calling thread's current device, which is xdal's own (per thread,
// like PyTorch's).
#include "xdal_torch.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>

namespace torch_xdal {

// ---------------------------------------------------------------- errors

std::string last_error_message() {
  char buf[1024];
  size_t needed = 0;
  if (xdal_get_last_error_message(buf, sizeof buf, &needed) != XDAL_SUCCESS) return "";
  return buf;
}

namespace {
thread_local const char* running_operator = nullptr;
thread_local const char* running_operator_syncs_because = nullptr;
}  // namespace

OperatorScope::OperatorScope(const char* name, const char* why) : named_(running_operator == nullptr) {
  if (!named_) return;
  running_operator = name;
  running_operator_syncs_because = why;
}

OperatorScope::~OperatorScope() {
  if (named_) running_operator = nullptr;
}

void raise(xdal_status_t status, const char* call) {
  std::string msg = std::string("xdal: ") + call + " failed: " + xdal_status_string(status) +
                    " (" + last_error_message() + ")";
  if ((status == XDAL_ERROR_CAPTURE_UNSUPPORTED || status == XDAL_ERROR_CAPTURE_INVALIDATED) && running_operator) {
    msg = std::string("xdal: ") + running_operator + " cannot be captured into a graph (" +
          running_operator_syncs_because + "; the capture is invalidated): " + msg.substr(6);
  }
  if (status == XDAL_ERROR_LAUNCH_FAILED) {
    const std::string why = host_fallback_failure();
    if (!why.empty()) msg += "; " + why;
  }
  if (status == XDAL_ERROR_OUT_OF_MEMORY) {
    C10_THROW_ERROR(OutOfMemoryError, msg);
  }
  C10_THROW_ERROR(Error, msg);
}

// ---------------------------------------------------------------- fork

namespace {

// xdal's runtime (the fake backend's workers, a driver's context) does not
// survive fork(): a child of a process that used xdal refuses xdal, with
// CUDA's wording, instead of waiting forever on threads it does not have.
std::atomic<bool> runtime_used{false};
std::atomic<bool> in_bad_fork_flag{false};

void after_fork_in_child() {
  if (runtime_used.load(std::memory_order_relaxed)) in_bad_fork_flag.store(true, std::memory_order_relaxed);
}

const bool fork_handler_installed [[maybe_unused]] = [] {
  pthread_atfork(nullptr, nullptr, &after_fork_in_child);
  return true;
}();

}  // namespace

bool in_bad_fork() { return in_bad_fork_flag.load(std::memory_order_relaxed); }

void use_runtime() {
  TORCH_CHECK(!in_bad_fork(),
              "Cannot re-initialize xdal in forked subprocess. To use xdal with multiprocessing, you must use the "
              "'spawn' start method");
  // Stored once: the device getters call this on every operator, and a
  // store each time would bounce the flag's cache line between threads.
  if (!runtime_used.load(std::memory_order_relaxed)) runtime_used.store(true, std::memory_order_relaxed);
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
  // Worded as PyTorch's reference backend (OpenReg) words it, which
  // PyTorch's tests match.
  TORCH_CHECK(device >= 0 && device < device_count(), "The device index is out of range. It must be in [0, ",
              int(device_count()), "), but got ", int(device), " (xdal).");
}

c10::DeviceIndex current_device() {
  use_runtime();
  int d = 0;
  TX_CHECK(xdal_device_get(&d));
  return c10::DeviceIndex(d);
}

void set_device(c10::DeviceIndex device) {
  use_runtime();
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
  // current_device: a forked child gets PyTorch's "Cannot re-initialize"
  // refusal here too, not xdal's own.
  const c10::DeviceIndex current = current_device();
  if (device >= 0 && device != current) {
    check_device(device);
    TX_CHECK(xdal_device_set(device));
    previous_ = current;
  }
}

DeviceSwitch::~DeviceSwitch() {
  if (previous_ >= 0) xdal_device_set(previous_);
}

}  // namespace torch_xdal
