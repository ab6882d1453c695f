// A custom PyTorch operator with an xdal kernel: xdal_example::scaled_add(a,
// b, alpha) = a + alpha * b, for float32 tensors of one shape.
//
//   - the schema, with TORCH_LIBRARY;
//   - the xdal kernel (PrivateUse1): one launch of xdal's built-in
//     axpby_f32 on the current stream of the tensors' device, the stream
//     PyTorch's current one (its native handle is the xdal_stream_t);
//   - a CPU kernel (the reference), a Meta kernel (shapes, for
//     torch.compile and meta tensors) and an Autograd kernel (d/da = 1,
//     d/db = alpha).
//
// Nothing here is torch_xdal's: only PyTorch's extension API and xdal's C
// ABI, as a vendor's operator library would be written.
#include <xdal/xdal.h>

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/autograd.h>
#include <torch/library.h>

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

at::Tensor scaled_add_xdal(const at::Tensor& a, const at::Tensor& b, double alpha) {
  check_operands(a, b);
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  uint64_t n = static_cast<uint64_t>(x.numel());
  if (n == 0) return out;
  // PyTorch's current stream of the device, as an xdal_stream_t.
  const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
  const c10::Stream stream = guard->getStream(x.device());
  auto native = reinterpret_cast<xdal_stream_t>(stream.native_handle());
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

TORCH_LIBRARY(xdal_example, m) { m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor"); }
TORCH_LIBRARY_IMPL(xdal_example, PrivateUse1, m) { m.impl("scaled_add", &scaled_add_xdal); }
TORCH_LIBRARY_IMPL(xdal_example, CPU, m) { m.impl("scaled_add", &scaled_add_cpu); }
TORCH_LIBRARY_IMPL(xdal_example, Meta, m) { m.impl("scaled_add", &scaled_add_meta); }
TORCH_LIBRARY_IMPL(xdal_example, Autograd, m) { m.impl("scaled_add", &scaled_add_autograd); }
