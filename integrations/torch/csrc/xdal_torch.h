// torch_xdal: a PyTorch PrivateUse1 backend built only on the xdal C ABI.
//
// Declarations shared by the translation units, one integration point each
// (docs/torch.md maps them onto xdal calls):
//   device.cpp            errors, the device count, the current device
//   streams.cpp           default streams, stream pools, current streams
//   guard.cpp             the device guard (DeviceGuardImplInterface)
//   device_allocator.cpp  the device allocator (c10::DeviceAllocator)
//   host_allocator.cpp    the pinned host allocator (at::HostAllocator)
//   generator.cpp         the per-device random generators
//   hooks.cpp             the PrivateUse1 hooks (PrivateUse1HooksInterface)
//   ops.cpp               ATen kernels registered for PrivateUse1, copies, the CPU fallback
//   kernels.cpp           host kernels launched through xdal_function_from_host (this
//                         part includes no ATen header, only c10 scalar types)
//   module.cpp            the Python module torch_xdal._C
#pragma once

#include <xdal/xdal.h>

#include <ATen/core/ATen_fwd.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/ScalarType.h>
#include <c10/core/Stream.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace torch_xdal {

constexpr c10::DeviceType kXdal = c10::DeviceType::PrivateUse1;

// Throws a c10::Error (c10::OutOfMemoryError for XDAL_ERROR_OUT_OF_MEMORY)
// carrying the status name and xdal's last error message.
[[noreturn]] void raise(xdal_status_t status, const char* call);
std::string last_error_message();

#define TX_CHECK(call)                                 \
  do {                                                 \
    xdal_status_t tx_status_ = (call);                 \
    if (C10_UNLIKELY(tx_status_ != XDAL_SUCCESS)) {    \
      ::torch_xdal::raise(tx_status_, #call);          \
    }                                                  \
  } while (0)

// ---- devices (device.cpp) ----
c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex device);
c10::DeviceIndex exchange_device(c10::DeviceIndex device);
void check_device(c10::DeviceIndex device);
// `device`, or the current device for a negative one.
c10::DeviceIndex resolve_device(c10::DeviceIndex device);

// Makes `device` xdal's current device for the calling thread while alive,
// for the calls that act on the current device (event creation, device
// synchronize, memory info). Streams need none: native_stream names every
// stream, default ones included, by a handle valid from any thread.
class DeviceSwitch {
 public:
  explicit DeviceSwitch(c10::DeviceIndex device);
  ~DeviceSwitch();
  DeviceSwitch(const DeviceSwitch&) = delete;
  DeviceSwitch& operator=(const DeviceSwitch&) = delete;

 private:
  int previous_ = -1;
};

// ---- streams (streams.cpp) ----
// Priority levels a device's stream pools have at most; level 0 is the
// lowest priority.
constexpr int kMaxPriorityLevels = 4;

// Stream ids: 0 is the device's default stream (the handle from
// xdal_device_get_default_stream); pool
// streams have bit 0 set, the priority level in bits 1-3 and the pool index
// above, as c10::cuda does.
xdal_stream_t native_stream(const c10::Stream& stream);
c10::Stream current_stream(c10::DeviceIndex device = -1);
c10::Stream default_stream(c10::DeviceIndex device = -1);
c10::Stream stream_from_pool(c10::DeviceIndex device, int priority);
void set_current_stream(const c10::Stream& stream);
void synchronize_stream(const c10::Stream& stream);
bool query_stream(const c10::Stream& stream);
// Makes work enqueued on `waiter` from now on wait for the work enqueued on
// `target` so far (an event recorded and waited on).
void stream_wait_stream(const c10::Stream& waiter, const c10::Stream& target);

// ---- device memory (device_allocator.cpp) ----
// Grows or shrinks a device storage to `new_size` bytes, keeping its
// contents (a stream-ordered device-to-device copy).
void resize_storage_bytes(c10::StorageImpl* storage, size_t new_size);
c10::Allocator* device_allocator();
void record_stream(const c10::DataPtr& data, const c10::Stream& stream);

// ---- pinned host memory (host_allocator.cpp) ----
c10::Allocator* host_allocator();
// True when `ptr` lies in pinned memory from xdal_malloc_host.
bool is_pinned_ptr(const void* ptr);
// Keeps the pinned block containing `ptr` (if it is one of ours) from being
// released before `stream` reaches this point.
void host_record_stream(const void* ptr, const c10::Stream& stream);

// ---- random generators (generator.cpp) ----
// The default generator of `device` (the current device for a negative one).
const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator new_generator(c10::DeviceIndex device);
// The CPU generator that draws the numbers of an xdal generator: the CPU
// fallback hands it to the CPU kernel.
at::Generator cpu_generator_of(const at::Generator& gen);

// ---- the CPU fallback (ops.cpp) ----
// How often each operator went through the CPU fallback (for tests and
// for finding the operators worth a native kernel).
std::vector<std::pair<std::string, int64_t>> fallback_counts();
void reset_fallback_counts();

// ---- kernels (kernels.cpp) ----
constexpr int kMaxDims = 16;

// Element types the host kernels convert between (a subset of ScalarType).
bool host_convert_supported(c10::ScalarType type);

// Metadata of a strided elementwise copy; passed by value as one kernel
// argument (never 8 bytes long, so xdal does not take it for a pointer).
struct StridedMeta {
  int32_t ndim;
  int32_t src_type;  // c10::ScalarType
  int32_t dst_type;  // c10::ScalarType
  int32_t itemsize;  // same-type copies move itemsize bytes per element
  int64_t numel;
  int64_t sizes[kMaxDims];
  int64_t src_strides[kMaxDims];  // in elements
  int64_t dst_strides[kMaxDims];  // in elements
};

// Strided fill of a byte pattern (itemsize bytes) into dst.
struct FillMeta {
  int32_t ndim;
  int32_t itemsize;
  int64_t numel;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
  unsigned char value[16];
};

// Host kernels, wrapped by xdal_function_from_host on first use.
// copy:  args (const void* src, void* dst, StridedMeta meta)
// fill:  args (void* dst, FillMeta meta)
xdal_function_t copy_kernel();
xdal_function_t fill_kernel();

// Built-in kernels by name ("fill_f32", "cast_f32_f16", ...), cached.
xdal_function_t builtin(const char* name);
// xdal's lower-case type name for a ScalarType, or nullptr if none.
const char* xdal_type_name(c10::ScalarType type);

// Launches of host kernels (xdal_function_from_host) so far: what a backend
// that runs no host code could not run (a GPU backend returns
// XDAL_ERROR_NOT_SUPPORTED there). For tests.
int64_t host_kernel_launches();

// Launches `fn` on `stream` over a grid sized for `n` elements. Host
// kernels written here process one contiguous chunk per block (block of 1);
// built-in kernels are grid-stride loops over blocks of 256.
void launch(xdal_function_t fn, const c10::Stream& stream, int64_t n, bool builtin_kernel,
            const xdal_kernel_arg_t* args, size_t num_args);

}  // namespace torch_xdal
