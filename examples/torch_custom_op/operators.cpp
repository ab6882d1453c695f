// Custom PyTorch operators with xdal kernels, for float32 tensors of one
// shape:
//
//   xdal_example::scaled_add(a, b, alpha) = a + alpha * b: one launch of
//     xdal's built-in axpby_f32 (every backend has it), with CPU, Meta
//     (shapes, for torch.compile and meta tensors) and Autograd (d/da = 1,
//     d/db = alpha) kernels;
//   xdal_example::squared_difference(a, b) = (a - b)^2: a kernel of its
//     own, xdal_example_squared_difference below, in a host module (this
//     very shared object, loaded with xdal_module_load) on backends that
//     load host modules; the others refuse with xdal's status.
//
// Launches go to the current stream of the tensors' device, PyTorch's
// current one (its native handle is the xdal_stream_t).
//
// Nothing here is torch_xdal's: only PyTorch's extension API and xdal's C
// ABI, as a vendor's operator library would be written.
#include <xdal/xdal.h>

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace {

void check(xdal_status_t status, const char* what) {
  if (status == XDAL_SUCCESS) return;
  char message[512] = {0};
  size_t needed = 0;
  xdal_get_last_error_message(message, sizeof message, &needed);
  TORCH_CHECK(false, "xdal_example: ", what, " failed: ", xdal_status_string(status), " (", message, ")");
}

void check_operands(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes().equals(b.sizes()), "scaled_add: shapes ", a.sizes(), " and ", b.sizes(), " differ");
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "scaled_add: float32 only, got ",
              a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), "scaled_add: tensors on ", a.device(), " and ", b.device());
}

xdal_function_t axpby_f32() {
  static std::once_flag once;
  static xdal_function_t fn = nullptr;
  std::call_once(once, [] {
    xdal_module_t builtins = nullptr;
    check(xdal_module_get_builtin(&builtins), "xdal_module_get_builtin");
    check(xdal_module_get_function(&fn, builtins, "axpby_f32"), "xdal_module_get_function(axpby_f32)");
  });
  return fn;
}

xdal_stream_t current_xdal_stream(const at::Tensor& t) {
  const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
  return reinterpret_cast<xdal_stream_t>(guard->getStream(t.device()).native_handle());
}

at::Tensor scaled_add_xdal(const at::Tensor& a, const at::Tensor& b, double alpha) {
  check_operands(a, b);
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  uint64_t n = static_cast<uint64_t>(x.numel());
  if (n == 0) return out;
  const xdal_stream_t native = current_xdal_stream(x);
  void* pa = x.data_ptr();
  void* pb = y.data_ptr();
  void* po = out.data_ptr();
  float one = 1.0f, scale = static_cast<float>(alpha);
  const xdal_kernel_arg_t args[] = {{&pa, sizeof pa}, {&pb, sizeof pb}, {&po, sizeof po},
                                    {&n, sizeof n},   {&one, sizeof one}, {&scale, sizeof scale}};
  const uint32_t blocks = static_cast<uint32_t>(std::min<uint64_t>((n + 255) / 256, 65535));
  check(xdal_launch_kernel(axpby_f32(), xdal_dim3_t{blocks, 1, 1}, xdal_dim3_t{256, 1, 1}, 0, native, args, 6),
        "xdal_launch_kernel(axpby_f32)");
  return out;
}

// The module of this library's own kernels: the shared object this code
// is in, loaded as an xdal host module.
xdal_function_t squared_difference_kernel() {
  static std::once_flag once;
  static xdal_function_t fn = nullptr;
  static xdal_status_t status = XDAL_SUCCESS;
  static std::string message;
  std::call_once(once, [] {
    Dl_info self{};
    TORCH_CHECK(dladdr(reinterpret_cast<void*>(&squared_difference_kernel), &self) && self.dli_fname,
                "xdal_example: cannot find its own shared object");
    xdal_module_t module = nullptr;
    status = xdal_module_load(&module, self.dli_fname);
    if (status == XDAL_SUCCESS) status = xdal_module_get_function(&fn, module, "xdal_example_squared_difference");
    if (status != XDAL_SUCCESS) {
      char buf[512] = {0};
      size_t needed = 0;
      xdal_get_last_error_message(buf, sizeof buf, &needed);
      message = buf;
    }
  });
  TORCH_CHECK(status == XDAL_SUCCESS, "xdal_example: squared_difference needs a backend that loads host modules; the ",
              xdal_backend_name(), " backend refused its kernel: ", xdal_status_string(status), " (", message, ")");
  return fn;
}

at::Tensor squared_difference_xdal(const at::Tensor& a, const at::Tensor& b) {
  check_operands(a, b);
  const xdal_function_t fn = squared_difference_kernel();
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  uint64_t n = static_cast<uint64_t>(x.numel());
  if (n == 0) return out;
  void* pa = x.data_ptr();
  void* pb = y.data_ptr();
  void* po = out.data_ptr();
  const xdal_kernel_arg_t args[] = {{&pa, sizeof pa}, {&pb, sizeof pb}, {&po, sizeof po}, {&n, sizeof n}};
  const uint32_t blocks = static_cast<uint32_t>(std::min<uint64_t>((n + 4095) / 4096, 64));
  check(xdal_launch_kernel(fn, xdal_dim3_t{blocks, 1, 1}, xdal_dim3_t{1, 1, 1}, 0, current_xdal_stream(x), args, 4),
        "xdal_launch_kernel(xdal_example_squared_difference)");
  return out;
}

at::Tensor squared_difference_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_operands(a, b);
  return (a - b) * (a - b);
}

at::Tensor squared_difference_meta(const at::Tensor& a, const at::Tensor& b) {
  check_operands(a, b);
  return at::empty_like(a, at::MemoryFormat::Contiguous);
}

at::Tensor scaled_add_cpu(const at::Tensor& a, const at::Tensor& b, double alpha) {
  check_operands(a, b);
  return a + alpha * b;
}

at::Tensor scaled_add_meta(const at::Tensor& a, const at::Tensor& b, double /*alpha*/) {
  check_operands(a, b);
  return at::empty_like(a, at::MemoryFormat::Contiguous);
}

class ScaledAdd : public torch::autograd::Function<ScaledAdd> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b,
                            double alpha) {
    ctx->saved_data["alpha"] = alpha;
    at::AutoDispatchBelowADInplaceOrView below;
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("xdal_example::scaled_add", "")
                               .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
    return op.call(a, b, alpha);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double alpha = ctx->saved_data["alpha"].toDouble();
    return {grads[0], grads[0] * alpha, at::Tensor()};
  }
};

at::Tensor scaled_add_autograd(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return ScaledAdd::apply(a, b, alpha);
}

}  // namespace

// The kernel of squared_difference, xdal's host-kernel signature: a
// grid-stride loop, one thread a block (docs/kernels.md).
extern "C" __attribute__((visibility("default"))) xdal_status_t xdal_example_squared_difference(
    const xdal_kernel_context_t* ctx, void* const* args) {
  const float* a = *static_cast<const float* const*>(args[0]);
  const float* b = *static_cast<const float* const*>(args[1]);
  float* out = *static_cast<float* const*>(args[2]);
  const uint64_t n = *static_cast<const uint64_t*>(args[3]);
  const uint64_t blocks = uint64_t(ctx->grid_dim.x) * ctx->grid_dim.y * ctx->grid_dim.z;
  const uint64_t block = (uint64_t(ctx->block_idx.z) * ctx->grid_dim.y + ctx->block_idx.y) * ctx->grid_dim.x +
                         ctx->block_idx.x;
  for (uint64_t i = block; i < n; i += blocks) {
    const float d = a[i] - b[i];
    out[i] = d * d;
  }
  return XDAL_SUCCESS;
}

TORCH_LIBRARY(xdal_example, m) {
  m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
  m.def("squared_difference(Tensor a, Tensor b) -> Tensor");
}
TORCH_LIBRARY_IMPL(xdal_example, PrivateUse1, m) {
  m.impl("scaled_add", &scaled_add_xdal);
  m.impl("squared_difference", &squared_difference_xdal);
}
TORCH_LIBRARY_IMPL(xdal_example, CPU, m) {
  m.impl("scaled_add", &scaled_add_cpu);
  m.impl("squared_difference", &squared_difference_cpu);
}
TORCH_LIBRARY_IMPL(xdal_example, Meta, m) {
  m.impl("scaled_add", &scaled_add_meta);
  m.impl("squared_difference", &squared_difference_meta);
}
TORCH_LIBRARY_IMPL(xdal_example, Autograd, m) { m.impl("scaled_add", &scaled_add_autograd); }
