// torch_xdal: a PyTorch PrivateUse1 backend built only on the xdal C ABI.
//
// Declarations shared by the translation units, each one integration
// point of docs/torch.md:
//   device.cpp            errors, the device count, the current device
//   streams.cpp           default streams, stream pools, current streams
//   guard.cpp             the device guard (DeviceGuardImplInterface)
//   device_allocator.cpp  the device allocator (c10::DeviceAllocator)
//   graph_pools.cpp       the allocator's private pools for graph captures
//   graphs.cpp            graph capture and replay (at::GraphImplInterface)
//   compiled_kernels.cpp  the launch of torch.compile's C++ kernels as host kernels
//   host_allocator.cpp    the pinned host allocator (at::HostAllocator)
//   generator.cpp         the per-device random generators
//   hooks.cpp             the PrivateUse1 hooks (PrivateUse1HooksInterface)
//   kernels.cpp           the host conversion kernel (xdal_function_from_host), built-in kernels
//                         and their launch (no ATen header, only c10 types)
//   tensors.cpp           ATen kernels: creation, views, resize_, set_, record_stream
//   copies.cpp            ATen kernels: _copy_from, _local_scalar_dense
//   fill.cpp              ATen kernels: fill_, zero_
//   arithmetic.cpp        ATen kernels: add, sub, mul
//   reductions.cpp        ATen kernels: sum
//   matmul.cpp            ATen kernels: mm
//   fallback.cpp          the CPU fallback for every other operator
//   registration.cpp      TORCH_LIBRARY_IMPL of the ATen kernels
//   autocast.cpp          the AutocastPrivateUse1 kernels (torch.autocast("xdal"))
//   profiler_stubs.cpp    the legacy profiler's device events (ProfilerStubs)
//   module.cpp            the Python module torch_xdal._C
#pragma once

#include <xdal/xdal.h>

#include <ATen/core/ATen_fwd.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>
#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/Stream.h>
#include <c10/core/SymIntArrayRef.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/OptionalArrayRef.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace c10 {
class OperatorHandle;  // ATen/core/dispatch/Dispatcher.h
struct IValue;         // ATen/core/ivalue.h
}  // namespace c10

namespace torch_xdal {

constexpr c10::DeviceType kXdal = c10::DeviceType::PrivateUse1;

// Throws a c10::Error (c10::OutOfMemoryError for XDAL_ERROR_OUT_OF_MEMORY)
// carrying the status name and xdal's last error message.
[[noreturn]] void raise(xdal_status_t status, const char* call);
std::string last_error_message();

// Names the operator the calling thread runs for the errors of the xdal
// calls that a graph capture refuses (a synchronization, a copy to the
// host): "aten::nonzero cannot be captured" says more than the call, and
// `why` says what in it synchronizes. The outermost scope names it; both
// strings must outlive the scope.
class OperatorScope {
 public:
  OperatorScope(const char* name, const char* why);
  ~OperatorScope();
  OperatorScope(const OperatorScope&) = delete;
  OperatorScope& operator=(const OperatorScope&) = delete;

 private:
  bool named_;
};

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
// Whether this process is a fork() child of one that used xdal; then every
// use of the runtime (use_runtime(), called by the device getters and
// setters) raises.
bool in_bad_fork();
void use_runtime();
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

// Gives a device block back to xdal (stream-ordered on `stream`, after
// every stream in `used_on`), or later if one of them captures a graph.
void free_device_block(void* ptr, const c10::Stream& stream, const std::vector<c10::Stream>& used_on) noexcept;

// ---- graph memory pools (graph_pools.cpp) ----
// A new pool id: {id, 0} for a graph's own pool, {0, id} for a user's
// handle (torch.xdal.graph_pool_handle), as c10::cuda numbers them.
c10::MempoolId_t new_graph_pool_id(bool user);
// From now until end_allocate_to_pool, device allocations on the streams
// of capture `capture_id` come from pool `pool` of `device`; the pool is
// held by one more graph until release_graph_pool.
void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t pool, uint64_t capture_id);
void end_allocate_to_pool(uint64_t capture_id);
void release_graph_pool(c10::MempoolId_t pool);
// A block for `n` bytes from the pool `stream`'s capture allocates from,
// or nullptr when the stream does not capture into one.
void* graph_pool_allocate(const c10::Stream& stream, size_t n);
// Takes back a block graph_pool_allocate gave; false when its pool is
// gone and the block must be freed as eager memory.
bool graph_pool_free(void* ptr, const c10::Stream& stream, const std::vector<c10::Stream>& used_on);
// True (and the free kept for later) when `stream` or one of `used_on`
// captures a graph, where xdal_free_async would join the capture.
bool defer_free_while_capturing(void* ptr, const c10::Stream& stream, const std::vector<c10::Stream>& used_on);
// Whether a capture of torch_xdal's is under way (device synchronizations
// would break it).
bool graph_capture_under_way();

// ---- graphs (graphs.cpp) ----
// Registers the graph implementation for torch.accelerator.Graph, under
// the backend's name (once it is renamed).
void register_graph_impl();
// Whether `stream` takes part in a capture (and, if asked, which one).
xdal_capture_status_t capture_status(const c10::Stream& stream, uint64_t* capture_id = nullptr);
inline bool stream_is_capturing(const c10::Stream& stream) {
  return capture_status(stream) != XDAL_CAPTURE_STATUS_NONE;
}
// Keeps `object` alive as long as the graph that capture `capture_id`
// makes; false when no graph of torch_xdal's captures it.
bool keep_for_capture(uint64_t capture_id, std::shared_ptr<void> object);
// Where `stream` captures a graph, keeps `storage` (host memory a captured
// copy reads or writes at every replay) alive as long as the graph.
void keep_storage_for_capture(const c10::Stream& stream, const c10::Storage& storage);

// ---- known ranges of integer tensors on the device (known_ranges.cpp) ----
// Notes that `t`'s elements lie in [least, greatest], as its writer
// guarantees (integer types; 32 ranges are kept, the least recently used
// of live tensors given up first).
void note_range(const at::Tensor& t, int64_t least, int64_t greatest);
// Notes the least and greatest of `cpu`'s elements, just copied into
// `dst` (integer types, up to 64Ki elements; others are not noted).
void note_range_of_copy(const at::Tensor& cpu, const at::Tensor& dst);
// True when every element of `t` is known to lie in [low, high): `t` lies
// within a noted tensor whose range does, and no operator has written it
// since (its version counter is where it was).
bool known_within(const at::Tensor& t, int64_t low, int64_t high);

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

// ---- kernels (kernels.cpp) ----
// Strided layouts have at most XDAL_STRIDED_MAX_DIMS dimensions (after
// fill_meta merges what it can), for the built-ins and the host kernels
// alike.

// Element types the host conversion kernel converts between (a subset of
// ScalarType).
bool host_convert_supported(c10::ScalarType type);

// Metadata of a strided elementwise conversion; passed by value as one
// kernel argument (never 8 bytes long, so xdal does not take it for a
// pointer).
struct StridedMeta {
  int32_t ndim;
  int32_t src_type;  // c10::ScalarType
  int32_t dst_type;  // c10::ScalarType
  int64_t numel;
  int64_t sizes[XDAL_STRIDED_MAX_DIMS];
  int64_t src_strides[XDAL_STRIDED_MAX_DIMS];  // in elements
  int64_t dst_strides[XDAL_STRIDED_MAX_DIMS];  // in elements
};

// The host conversion kernel, args (const void* src, void* dst, StridedMeta
// meta): converts with c10::convert, the CPU's own element conversion.
// nullptr where the backend runs no host code (xdal_function_from_host is
// XDAL_ERROR_NOT_SUPPORTED there).
xdal_function_t copy_kernel();
// Whether the backend runs host kernels (the fake backend does; OpenCL's
// does not).
bool runs_host_kernels();
// A host function as an xdal function, or nullptr where the backend runs
// no host code (XDAL_ERROR_NOT_SUPPORTED: a GPU-like backend such as
// OpenCL's). Any other failure raises.
xdal_function_t function_from_host(xdal_host_kernel_t fn);

// Built-in kernels by name ("fill_f32", "cast_f32_f16", ...), cached.
xdal_function_t builtin(const char* name);
// The built-in `<family>_<type>` (or `<family>_<type>_<type2>`): family
// and types must be strings of static storage (literals, builtin_type_name,
// bits_type_name), which key a per-thread cache, so that a launch builds no
// string and takes no lock once a thread has asked.
xdal_function_t builtin(const char* family, const char* type, const char* type2 = nullptr);
// xdal's lower-case name for a ScalarType in built-in kernel names ("f32"
// in "fill_f32"), or nullptr if xdal has no such type.
const char* builtin_type_name(c10::ScalarType type);
// xdal's name for the integer type of `itemsize` bytes (1, 2, 4 or 8):
// moves and fills of any dtype's elements are moves and fills of their
// bits. nullptr for other sizes.
const char* bits_type_name(size_t itemsize);
// The types of xdal's arithmetic built-ins (add_<t>, mul_<t>, axpby_<t>,
// sum_<t>, ...) that the native kernels use.
bool native_arith_type(c10::ScalarType type);

// Fills m's ndim, sizes and strides (in elements) for an elementwise walk
// over `sizes` with source strides `sstr` and destination strides `dstr`:
// drops size-1 dimensions and merges dimensions that are contiguous in
// both. False when more than XDAL_STRIDED_MAX_DIMS remain.
bool fill_meta(c10::IntArrayRef sizes, c10::IntArrayRef sstr, c10::IntArrayRef dstr, StridedMeta& m);

// The layout arguments of xdal's strided built-ins (1.1), passed by value:
// ndim, then sizes and strides (in elements) as arrays of XDAL_STRIDED_MAX_DIMS.
struct BuiltinLayout {
  uint64_t ndim = 0;
  uint64_t sizes[XDAL_STRIDED_MAX_DIMS] = {};
  int64_t src_strides[XDAL_STRIDED_MAX_DIMS] = {};
  int64_t dst_strides[XDAL_STRIDED_MAX_DIMS] = {};
};
BuiltinLayout builtin_layout(const StridedMeta& m);

// Launches of the host kernel (xdal_function_from_host) so far: what a
// backend that runs no host code does otherwise (through the CPU). For
// tests.
int64_t host_kernel_launches();

// Launches `fn` on `stream` over a grid sized for `n` elements. Host
// kernels written here process one contiguous chunk per block (block of 1);
// built-in kernels are grid-stride loops over blocks of 256.
void launch(xdal_function_t fn, const c10::Stream& stream, int64_t n, bool builtin_kernel,
            const xdal_kernel_arg_t* args, size_t num_args);

// ---- torch.compile's kernels (compiled_kernels.cpp) ----
// How launch_compiled_kernel passes each argument of a kernel Inductor
// compiled (torch_xdal/_inductor.py numbers them the same).
enum class CompiledArgKind : int { Pointer = 0, I64, I32, F64, F32, Bool };
struct CompiledArg {
  CompiledArgKind kind;
  at::Tensor* tensor;  // Pointer: an xdal tensor (its data pointer)
  int64_t integer;     // I64, I32, Bool
  double real;         // F64, F32
};
// Enqueues the compiled kernel whose host-kernel entry point is at
// `entry` on the current stream of its tensors' device.
void launch_compiled_kernel(uintptr_t entry, const std::vector<CompiledArg>& args);

// ---- tensors (tensors.cpp) ----
bool is_xdal(const at::Tensor& t);
// The tensor's data pointer (device memory: for xdal calls only).
char* ptr_of(const at::Tensor& t);
// True for a conjugate or negative view (bits the native kernels leave to
// the CPU).
bool has_bits(const at::Tensor& t);
// True when a and b share memory (the built-ins refuse most overlaps).
bool ranges_overlap(const at::Tensor& a, const at::Tensor& b);
// PyTorch's checks before an operator writes `out` from `inputs`
// (TensorIterator's): no two elements of out share memory, and no input
// overlaps it partially (the same elements, in place, are allowed). Raise
// PyTorch's "unsupported operation" errors, before any xdal work is queued.
void check_write_overlap(const at::Tensor& out, at::ArrayRef<at::Tensor> inputs);

// ---- copies (copies.cpp) ----
// Copies src (already expanded to dst's shape) into dst, both on the same
// xdal device, converting the element type; ignores conj/neg bits.
void copy_same_device(const at::Tensor& src, const at::Tensor& dst, const c10::Stream& s);

// ---- fill (fill.cpp) ----
// The bytes of a scalar as an element of a type, converted as the CPU does.
struct ScalarBytes {
  unsigned char bytes[16] = {0};
  size_t size = 0;
};
ScalarBytes scalar_bytes(const c10::Scalar& value, c10::ScalarType type);
// Fills an xdal tensor of any layout and type with `value` on the current
// stream of its device.
at::Tensor& fill_with(at::Tensor& self, const c10::Scalar& value);

// How often each operator took a path, for tests and the bench; safe
// from any thread.
class OperatorCounts {
 public:
  void add(const std::string& name) {
    std::lock_guard<std::mutex> g(mutex_);
    counts_[name]++;
  }
  std::vector<std::pair<std::string, int64_t>> snapshot() const {
    std::lock_guard<std::mutex> g(mutex_);
    return {counts_.begin(), counts_.end()};
  }
  void clear() {
    std::lock_guard<std::mutex> g(mutex_);
    counts_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, int64_t> counts_;
};

// ---- the CPU fallback (fallback.cpp) ----
// How often each operator went through the CPU fallback (for tests and
// for finding the operators worth a native kernel).
std::vector<std::pair<std::string, int64_t>> fallback_counts();
void reset_fallback_counts();
// Whether two elements of a tensor of these sizes and strides may be one
// memory location (an expanded dimension, say): such a tensor cannot be
// written element by element.
bool may_overlap_itself(at::IntArrayRef sizes, at::IntArrayRef strides);

// The copy-free fallback (host_fallback.cpp): on a backend that runs host
// code, enqueues the operator's CPU kernel as a host kernel over the
// device memory, its results allocated from the meta kernel's shapes, and
// replaces the arguments at stack[base..] by the results. False, with the
// stack untouched, where the operator must take the copying fallback.
// Counted under `counted_as` if given, else the operator's name.
bool run_as_host_kernel(const c10::OperatorHandle& op, std::vector<c10::IValue>* stack, size_t base,
                        c10::Device device, const char* counted_as = nullptr);
// How often each operator took that path (a subset of fallback_counts).
std::vector<std::pair<std::string, int64_t>> host_fallback_counts();
void reset_host_fallback_counts();
// While alive on a thread, the CPU kernels it runs take temporaries of
// 64 KiB and more from host_scratch.cpp's cache (host kernels only).
class HostScratchScope {
 public:
  HostScratchScope();
  ~HostScratchScope();
  HostScratchScope(const HostScratchScope&) = delete;
  HostScratchScope& operator=(const HostScratchScope&) = delete;

 private:
  bool was_;
};
// Wraps the process's CPU allocator with that cache, once (before the
// first host-kernel fallback).
void install_host_scratch_allocator();
// Why the last host kernel that failed did ("" if none has): the stream
// reports XDAL_ERROR_LAUNCH_FAILED, and this says what the CPU kernel (a
// fallback's, or a compiled one) raised. The last, not the first: a
// process that goes on after one stream's failure should not see that
// text again for another stream's later one.
std::string host_fallback_failure();
// Keeps `why` as the answer of host_fallback_failure(): called by a
// failing host kernel, on the worker thread.
void note_host_kernel_failure(const std::string& why);
// Sends to the CPU fallback the functional and in-place variants that
// PyTorch would otherwise run, for a backend without their kernel, through
// a generated wrapper around their out= variant. Once, after every static
// registration (from the module's initialisation).
void route_generated_wrappers_to_fallback();

// ---- ATen kernels, registered for PrivateUse1 in registration.cpp ----
// Named after their operators, in a namespace of their own so that none
// looks like a call of xdal's C ABI.
namespace ops {

// copies.cpp
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
c10::Scalar local_scalar_dense(const at::Tensor& self);

// tensors.cpp
at::Tensor empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                 std::optional<c10::Device> device, std::optional<bool> pin_memory,
                 std::optional<c10::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory);
const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format);
at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset);
at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size);
at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride);
at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride);
at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source);
at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source);
void record_stream(at::Tensor& self, c10::Stream stream);

// fill.cpp
at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value);
at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero_(at::Tensor& self);

// arithmetic.cpp
at::Tensor add(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);
at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);
at::Tensor& add_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha, at::Tensor& out);
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);
at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);
at::Tensor& sub_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha, at::Tensor& out);
at::Tensor mul(const at::Tensor& self, const at::Tensor& other);
at::Tensor& mul_(at::Tensor& self, const at::Tensor& other);
at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);

// reductions.cpp
at::Tensor sum(const at::Tensor& self, c10::OptionalIntArrayRef dim, bool keepdim,
               std::optional<c10::ScalarType> dtype);
at::Tensor& sum_out(const at::Tensor& self, c10::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor& out);

// matmul.cpp
at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2);
at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out);

// fallback.cpp: the boxed CPU fallback (stack: a torch::jit::Stack), and
// the convolutions it cannot reach (no CPU kernel under these names). The
// kernels above call it, for the cases they leave to the CPU, through
// at::native::call_fallback_fn<&cpu_fallback, Op>.
void cpu_fallback(const c10::OperatorHandle& op, std::vector<c10::IValue>* stack);
at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask);

}  // namespace ops

}  // namespace torch_xdal
