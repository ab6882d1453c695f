// Autocast (torch.autocast("xdal")): the AutocastPrivateUse1 kernels, with
// the policy PyTorch gives CUDA, from PyTorch's own operator lists
// (ATen/autocast_mode.h): matrix products and convolutions in the autocast
// dtype, softmax, losses, norms and reductions in float32, mixed-type
// operators promoted, binary_cross_entropy refused as unsafe (as on CUDA).
// Every other operator falls through to the xdal kernels.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torch_xdal {
namespace {

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  using namespace at::autocast;
  // The names PyTorch's lists use unqualified.
  using at::IntArrayRef;
  using at::Scalar;
  using at::ScalarType;
  using at::Tensor;
#define TX_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TX_LOWER_PRECISION_FP)
  // The convolution PyTorch routes to an out-of-tree device.
  KERNEL_PRIVATEUSEONE(convolution_overrideable, lower_precision_fp)
#undef TX_LOWER_PRECISION_FP
#define TX_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TX_FP32)
#undef TX_FP32
#define TX_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TX_FP32_SET_OPT_DTYPE)
#undef TX_FP32_SET_OPT_DTYPE
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define TX_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TX_PROMOTE)
#undef TX_PROMOTE
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace
}  // namespace torch_xdal
