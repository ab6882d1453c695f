// torch.compile's kernels: the C++ kernels Inductor generates for xdal
// (torch_xdal/_inductor.py) run as host kernels on the current stream. One
// xdal function serves them all: its first argument is the compiled
// kernel's entry point (a host address, which xdal leaves alone), the
// others the kernel's own, pointers translated by xdal as for any host
// kernel.
#include "xdal_torch.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <array>
#include <cstring>
#include <string>

namespace torch_xdal {
namespace {

// The entry point Inductor's kernel is compiled with (_inductor.py's
// _entry_source): the kernel's arguments, as a host kernel gets them, and
// room for what it raised. It catches what the kernel throws (a failed
// TORCH_CHECK, an index out of bounds): nothing may unwind into xdal.
using CompiledEntry = int (*)(const void* context, void* const* args, char* message, size_t capacity);

xdal_status_t compiled_kernel(const xdal_kernel_context_t* context, void* const* args) {
  // The caller's intra-op thread count, not the worker's default: the
  // kernels parallelize with OpenMP.
  at::init_num_threads();
  const auto entry = reinterpret_cast<CompiledEntry>(*static_cast<const uintptr_t*>(args[0]));
  std::array<char, 1024> message;  // written by the entry only when it fails
  message[0] = 0;
  if (entry(context, args + 1, message.data(), message.size()) == 0) return XDAL_SUCCESS;
  note_host_kernel_failure(std::string("a kernel of torch.compile failed: ") + message.data());
  return XDAL_ERROR_LAUNCH_FAILED;
}

xdal_function_t compiled_kernel_function() {
  static xdal_function_t f = function_from_host(&compiled_kernel);
  return f;
}

}  // namespace

void launch_compiled_kernel(uintptr_t entry, const std::vector<CompiledArg>& args) {
  const xdal_function_t fn = compiled_kernel_function();
  TORCH_CHECK(fn, "xdal: the ", xdal_backend_name(), " backend runs no host code, so no compiled kernel");
  TORCH_CHECK(args.size() + 1 <= 4096 / sizeof(void*), "xdal: a compiled kernel with ", args.size(),
              " arguments is more than one launch takes");
  std::optional<c10::Device> device;
  std::vector<std::array<unsigned char, 8>> bytes(args.size() + 1);
  std::vector<xdal_kernel_arg_t> launch_args(args.size() + 1);
  std::memcpy(bytes[0].data(), &entry, sizeof entry);
  launch_args[0] = {bytes[0].data(), sizeof entry};
  for (size_t i = 0; i < args.size(); ++i) {
    const CompiledArg& a = args[i];
    unsigned char* b = bytes[i + 1].data();
    size_t size = 8;
    switch (a.kind) {
      case CompiledArgKind::Pointer: {
        const at::Tensor& t = *a.tensor;
        TORCH_CHECK(is_xdal(t), "xdal: argument ", i, " of a compiled kernel is a tensor on ", t.device(),
                    ", not on an xdal device");
        TORCH_CHECK(!device || *device == t.device(), "xdal: a compiled kernel's tensors are on ", *device,
                    " and ", t.device());
        device = t.device();
        void* p = ptr_of(t);
        std::memcpy(b, &p, sizeof p);
        break;
      }
      case CompiledArgKind::I64: std::memcpy(b, &a.integer, 8); break;
      case CompiledArgKind::I32: {
        const auto v = static_cast<int32_t>(a.integer);
        std::memcpy(b, &v, size = 4);
        break;
      }
      case CompiledArgKind::F64: std::memcpy(b, &a.real, 8); break;
      case CompiledArgKind::F32: {
        const auto v = static_cast<float>(a.real);
        std::memcpy(b, &v, size = 4);
        break;
      }
      case CompiledArgKind::Bool: {
        const bool v = a.integer != 0;
        std::memcpy(b, &v, size = 1);
        break;
      }
    }
    launch_args[i + 1] = {b, size};
  }
  const c10::Stream stream = current_stream(device ? device->index() : -1);
  const xdal_dim3_t one{1, 1, 1};
  TX_CHECK(xdal_launch_kernel(fn, one, one, 0, native_stream(stream), launch_args.data(), launch_args.size()));
}

}  // namespace torch_xdal
