// Registration of the ATen kernels for PrivateUse1 (their definitions are
// in copies.cpp, tensors.cpp, fill.cpp, arithmetic.cpp, reductions.cpp,
// matmul.cpp and fallback.cpp), and the fallthroughs that let _copy_from
// resolve conjugate and negative bits itself. Every other operator goes to
// the CPU fallback (fallback.cpp).
#include "xdal_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

namespace torch_xdal {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", ops::empty);
  m.impl("empty_strided", ops::empty_strided);
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
  // The CPU's fused kernel rather than PyTorch's decomposition for other
  // backends, so that results match the CPU's to the last bit.
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
  m.impl("addr", torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
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
