// add, sub and mul (functional, in place, out=) on xdal's built-ins
// add_<t>, mul_<t> and axpby_<t>, after PyTorch's type promotion and
// broadcasting; the cases they do not cover go to the CPU fallback.
#include "xdal_torch.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/sub.h>
#include <c10/core/DeviceGuard.h>

#include <string>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;

// An operand as a contiguous xdal tensor of `type` and `shape`, or an
// undefined tensor when it cannot be made one here.
Tensor operand(const Tensor& x, at::ScalarType type, at::IntArrayRef shape, at::Device device) {
  Tensor t = x;
  if (!is_xdal(t)) {
    if (t.dim() != 0) return Tensor();
    t = at::empty({}, at::TensorOptions().dtype(type).device(device));
    fill_with(t, x.item());
  } else if (t.device() != device || has_bits(t)) {
    return Tensor();
  }
  if (t.scalar_type() != type) t = t.to(type);
  if (!t.sizes().equals(shape) || !t.is_contiguous()) t = t.expand(shape).contiguous();
  return t;
}

// out = a (op) b with xdal's add_<t>/mul_<t>, or, given `scale`, out = a +
// scale * b with axpby_<t> (1.1: add and sub with alpha); false when the
// case is left to the fallback (type promotion into another out type, ...).
bool binary_native(const char* op, const Tensor& self, const Tensor& other, const Tensor& out,
                   const at::Scalar* scale = nullptr) {
  if (!is_xdal(out) || has_bits(out)) return false;
  check_write_overlap(out, {self, other});
  const at::ScalarType type = at::result_type(self, other);
  if (!native_arith_type(type) || out.scalar_type() != type) return false;
  std::vector<int64_t> shape = at::infer_size(self.sizes(), other.sizes());
  c10::DeviceGuard g(out.device());
  Tensor a = operand(self, type, shape, out.device());
  Tensor b = operand(other, type, shape, out.device());
  if (!a.defined() || !b.defined()) return false;
  at::native::resize_output(out, shape);
  const int64_t n = out.numel();
  if (n == 0) return true;
  // xdal accepts out == a or out == b, no other overlap.
  const bool direct = out.is_contiguous() && (out.is_same(a) || !ranges_overlap(out, a)) &&
                      (out.is_same(b) || !ranges_overlap(out, b));
  Tensor o = direct ? out : at::empty(shape, out.options().memory_format(at::MemoryFormat::Contiguous));
  const std::string name = std::string(scale ? "axpby" : op) + "_" + builtin_type_name(type);
  void* pa = ptr_of(a);
  void* pb = ptr_of(b);
  void* po = ptr_of(o);
  if (po != pa && ranges_overlap(o, a)) return false;
  uint64_t count = uint64_t(n);
  const ScalarBytes one = scalar_bytes(1, type);
  const ScalarBytes beta = scale ? scalar_bytes(*scale, type) : one;
  xdal_kernel_arg_t args[] = {{&pa, 8}, {&pb, 8}, {&po, 8}, {&count, 8}, {one.bytes, one.size}, {beta.bytes, beta.size}};
  const c10::Stream s = current_stream(out.device().index());
  launch(builtin(name.c_str()), s, n, true, args, scale ? 6 : 4);
  if (!direct) copy_same_device(o, out, s);
  return true;
}

bool same_shape_in_place(const Tensor& self, const Tensor& other) {
  return at::infer_size(self.sizes(), other.sizes()) == self.sizes().vec();
}

bool alpha_is_one(const at::Scalar& alpha) {
  if (alpha.isBoolean()) return alpha.toBool();
  if (alpha.isIntegral(false)) return alpha.toLong() == 1;
  if (alpha.isFloatingPoint()) return alpha.toDouble() == 1.0;
  return false;
}

Tensor new_result(const Tensor& self, const Tensor& other) {
  const at::Device device = is_xdal(self) ? self.device() : other.device();
  return at::empty({0}, at::TensorOptions().dtype(at::result_type(self, other)).device(device));
}

// a + alpha * b: add_<t> when alpha is 1, else axpby_<t>.
bool add_native(const Tensor& self, const Tensor& other, const at::Scalar& alpha, const Tensor& out) {
  return alpha_is_one(alpha) ? binary_native("add", self, other, out) : binary_native("add", self, other, out, &alpha);
}

// a - alpha * b as a + (-alpha) * b (exact: negation); PyTorch refuses
// sub on bool, so bool is left to the fallback, which raises its error.
bool sub_native(const Tensor& self, const Tensor& other, const at::Scalar& alpha, const Tensor& out) {
  if (at::result_type(self, other) == at::kBool) return false;
  const at::Scalar minus = -alpha;
  return binary_native("sub", self, other, out, &minus);
}

}  // namespace

namespace ops {

Tensor add(const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  Tensor out = new_result(self, other);
  if (add_native(self, other, alpha, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::add_Tensor>::call(self, other, alpha);
}

Tensor& add_(Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  if (same_shape_in_place(self, other) && add_native(self, other, alpha, self)) return self;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::add__Tensor>::call(self, other, alpha);
}

Tensor& add_out(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  if (add_native(self, other, alpha, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::add_out>::call(self, other, alpha, out);
}

Tensor sub(const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  Tensor out = new_result(self, other);
  if (sub_native(self, other, alpha, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sub_Tensor>::call(self, other, alpha);
}

Tensor& sub_(Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  if (same_shape_in_place(self, other) && sub_native(self, other, alpha, self)) return self;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sub__Tensor>::call(self, other, alpha);
}

Tensor& sub_out(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  if (sub_native(self, other, alpha, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sub_out>::call(self, other, alpha, out);
}

Tensor mul(const Tensor& self, const Tensor& other) {
  Tensor out = new_result(self, other);
  if (binary_native("mul", self, other, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul_Tensor>::call(self, other);
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  if (same_shape_in_place(self, other) && binary_native("mul", self, other, self)) return self;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul__Tensor>::call(self, other);
}

Tensor& mul_out(const Tensor& self, const Tensor& other, Tensor& out) {
  if (binary_native("mul", self, other, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul_out>::call(self, other, out);
}

}  // namespace ops
}  // namespace torch_xdal
