// Registration of the ATen kernels for PrivateUse1 (their definitions are
// in copies.cpp, tensors.cpp, fill.cpp, arithmetic.cpp, reductions.cpp,
// matmul.cpp and fallback.cpp), and the fallthroughs that let _copy_from
// resolve conjugate and negative bits itself, and the choice of attention
// kernel. Every other operator goes to the CPU fallback (fallback.cpp);
// some that have no CPU kernel are composed in Python
// (torch_xdal/_composite_kernels.py).
#include "xdal_torch.h"

#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/new_empty_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

namespace torch_xdal {
namespace {

// An uninitialized CPU tensor of t's layout: what the CPU's choice of
// attention kernel reads (shapes, strides, dtypes, whether a gradient is
// wanted), never values.
at::Tensor cpu_placeholder(const at::Tensor& t) {
  at::Tensor p = at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
  if (t.requires_grad()) p.requires_grad_(true);
  return p;
}

// scaled_dot_product_attention asks this (a DispatchStub, and the
// _fused_sdp_choice operator for callers that ask directly) which kernel
// to run. xdal answers as the CPU does for the same shapes, dtypes and
// flags, offering the CPU's fused kernel as PyTorch's out-of-tree entry
// point, which _composite_kernels.py implements with it. Grouped-query
// attention with fewer key heads takes the math path: the out-of-tree
// entry point has no enable_gqa argument. So does float64, as on CUDA
// (whose fused kernels take no float64): the fused kernel's backward has
// no derivative of its own, the math path's does, and double backward
// (gradgradcheck of a Transformer, say) is what float64 attention is
// mostly run for.
int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  if (enable_gqa && query.dim() >= 3 && key.dim() >= 3 && query.size(-3) != key.size(-3)) {
    return int64_t(at::SDPBackend::math);
  }
  if (query.scalar_type() == at::kDouble) return int64_t(at::SDPBackend::math);
  std::optional<at::Tensor> mask;
  if (attn_mask && attn_mask->defined()) mask = cpu_placeholder(*attn_mask);
  const int64_t cpu = at::_fused_sdp_choice(cpu_placeholder(query), cpu_placeholder(key), cpu_placeholder(value),
                                            mask, dropout_p, is_causal, scale, enable_gqa);
  return cpu == int64_t(at::SDPBackend::flash_attention) ? int64_t(at::SDPBackend::overrideable) : cpu;
}

// PyTorch lets `tensor.data = other` move a CPU tensor to CUDA and back
// (TensorImpl::has_compatible_shallow_copy_type lists the dense backends
// that may trade places), but its list leaves out PrivateUse1. Strided
// tensors of xdal and the CPU may trade places as the CPU's and CUDA's do.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto movable = [](const at::Tensor& t) {
    return t.layout() == at::kStrided && !t.is_nested() && (is_xdal(t) || t.is_cpu());
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (movable(self) && movable(from));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", ops::empty);
  m.impl("empty_strided", ops::empty_strided);
  // ATen's kernel (empty_strided with the tensor's options), which PyTorch
  // registers for its own backends only: through the fallback, the result
  // came back with the CPU's strides made dense.
  m.impl("new_empty_strided", TORCH_FN(at::native::new_empty_strided_symint));
  m.impl("resize_", ops::resize_);
  m.impl("as_strided", ops::as_strided);
  m.impl("view", ops::view);
  m.impl("_reshape_alias", ops::reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("set_.source_Storage", ops::set_source_storage);
  m.impl("set_.source_Storage_storage_offset", ops::set_storage);
  m.impl("set_.source_Tensor", ops::set_source_tensor);
  m.impl("_copy_from", ops::copy_from);
  m.impl("_copy_from_and_resize", ops::copy_from_and_resize);
  m.impl("_local_scalar_dense", ops::local_scalar_dense);
  m.impl("fill_.Scalar", ops::fill_scalar);
  m.impl("fill_.Tensor", ops::fill_tensor);
  m.impl("zero_", ops::zero_);
  m.impl("add.Tensor", ops::add);
  m.impl("add_.Tensor", ops::add_);
  m.impl("add.out", ops::add_out);
  m.impl("sub.Tensor", ops::sub);
  m.impl("sub_.Tensor", ops::sub_);
  m.impl("sub.out", ops::sub_out);
  m.impl("mul.Tensor", ops::mul);
  m.impl("mul_.Tensor", ops::mul_);
  m.impl("mul.out", ops::mul_out);
  m.impl("sum.dim_IntList", ops::sum);
  m.impl("sum.IntList_out", ops::sum_out);
  m.impl("mm", ops::mm);
  m.impl("mm.out", ops::mm_out);
  m.impl("convolution_overrideable", ops::convolution);
  m.impl("convolution_backward_overrideable", ops::convolution_backward);
  m.impl("record_stream", ops::record_stream);
  m.impl("_fused_sdp_choice", fused_sdp_choice);
  m.impl("is_set_to", at::native::is_set_to);
  // The CPU's fused kernel rather than PyTorch's decomposition for other
  // backends, so that results match the CPU's to the last bit.
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
  m.impl("addr", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
  // mode's out= kernel (through which mode itself runs) is registered for
  // every backend but checks for the CPU, CUDA or XPU: the CPU's kernel.
  m.impl("mode.values", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

// _copy_from resolves conjugate and negative bits itself (through the CPU).
// Without these, the Conjugate/Negative fallbacks would materialize the
// source with clone(), whose copy_ comes back here with the bit still set.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace torch_xdal

// The stub's registration names its struct unqualified.
namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &::torch_xdal::fused_sdp_choice)
}  // namespace at::native
