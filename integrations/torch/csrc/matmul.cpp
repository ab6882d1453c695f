// mm (and matmul of 2-D tensors, which PyTorch lowers to it) on xdal's
// built-in matmul_<t>; other types go to the CPU fallback.
#include "xdal_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>

#include <string>

namespace torch_xdal {
namespace {

using at::Tensor;

bool mm_native(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  if (!is_xdal(self) || !is_xdal(mat2) || !is_xdal(out) || self.device() != mat2.device() ||
      out.device() != self.device())
    return false;
  if (self.dim() != 2 || mat2.dim() != 2 || self.size(1) != mat2.size(0)) return false;
  const at::ScalarType type = self.scalar_type();
  if (mat2.scalar_type() != type || out.scalar_type() != type || has_bits(self) || has_bits(mat2) || has_bits(out))
    return false;
  switch (type) {
    case at::kDouble: case at::kFloat: case at::kHalf: case at::kBFloat16: case at::kLong: case at::kInt:
    case at::kShort: case at::kChar: case at::kByte:
      break;
    default:
      return false;
  }
  DeviceSwitch on(self.device().index());
  const int64_t m = self.size(0), k = self.size(1), n = mat2.size(1);
  at::native::resize_output(out, {m, n});
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    fill_with(const_cast<Tensor&>(out), 0);
    return true;
  }
  Tensor a = self.contiguous(), b = mat2.contiguous();
  const bool direct = out.is_contiguous() && !ranges_overlap(out, a) && !ranges_overlap(out, b);
  Tensor c = direct ? out : at::empty({m, n}, out.options().memory_format(at::MemoryFormat::Contiguous));
  void* pa = ptr_of(a);
  void* pb = ptr_of(b);
  void* pc = ptr_of(c);
  uint64_t um = uint64_t(m), un = uint64_t(n), uk = uint64_t(k);
  xdal_kernel_arg_t args[] = {{&pa, 8}, {&pb, 8}, {&pc, 8}, {&um, 8}, {&un, 8}, {&uk, 8}};
  const c10::Stream s = current_stream(self.device().index());
  // A block per 128 rows of c (launch sizes grids in 256s): the fake
  // backend's GEMM packs all of b for each block, so more, smaller blocks
  // would only repeat that.
  launch(builtin("matmul", builtin_type_name(type)), s, (m + 127) / 128 * 256, true, args, 6);
  if (!direct) copy_same_device(c, out, s);
  return true;
}

}  // namespace

namespace ops {

Tensor mm(const Tensor& self, const Tensor& mat2) {
  Tensor out = at::empty({0}, self.options());
  if (mm_native(self, mat2, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mm>::call(self, mat2);
}

Tensor& mm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  if (mm_native(self, mat2, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mm_out>::call(self, mat2, out);
}

}  // namespace ops
}  // namespace torch_xdal
