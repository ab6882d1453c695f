// add, sub and mul (functional, in place, out=) on xdal's built-ins
// add_<t>, mul_<t> and axpby_<t>, after PyTorch's type promotion and
// broadcasting; the cases they do not cover go to the CPU fallback.
#include "xdal_torch.h"

#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/result_type_native.h>
#include <ATen/ops/sub.h>

#include <algorithm>
#include <string>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;

// Whether x can be an operand of a native kernel writing `out`: an xdal
// tensor on out's device without conjugate or negative bits, or a CPU
// 0-dim tensor (a Python number).
bool native_operand(const Tensor& x, const Tensor& out) {
  return is_xdal(x) ? x.device() == out.device() && !has_bits(x) : x.dim() == 0;
}

// x (native_operand) converted to `type` and laid out as `like`.
Tensor laid_out(const Tensor& x, at::ScalarType type, const Tensor& like) {
  Tensor t = x;
  if (!is_xdal(t)) {
    // Converted on the CPU first, as TensorIterator converts a CPU scalar:
    // uint8 + 1000 wraps around there, where a fill would refuse 1000.
    t = at::empty({}, like.options().dtype(type));
    fill_with(t, x.to(type).item());
  }
  if (t.scalar_type() != type) t = t.to(type);
  if (!t.sizes().equals(like.sizes()) || !t.strides().equals(like.strides())) {
    Tensor laid = at::empty_strided(like.sizes(), like.strides(), like.options().dtype(type));
    laid.copy_(t.expand(like.sizes()));
    t = laid;
  }
  return t;
}

// Operand x (native_operand) as an xdal tensor of `type` with the sizes and
// strides of `like`: then element i of each is at the same offset. x
// itself where it is one already (no copy of the handle: copying a tensor
// that Python holds takes the GIL to count the reference), else one made
// in `made`.
const Tensor& operand(const Tensor& x, at::ScalarType type, const Tensor& like, Tensor& made) {
  if (is_xdal(x) && x.scalar_type() == type && x.sizes().equals(like.sizes()) && x.strides().equals(like.strides()))
    return x;
  made = laid_out(x, type, like);
  return made;
}

// The strides PyTorch's TensorIterator gives the result of an elementwise
// operator on a and b (the inputs' layout: channels_last in, channels_last
// out), asked of TensorIterator itself on meta tensors of their layouts.
// Inputs with a contiguous tensor's strides (or scalars) give a contiguous
// result without asking. Not merely is_contiguous(): a (10, 3, 1, 1)
// tensor in channels_last is contiguous too, and TensorIterator keeps its
// strides of the size-1 dimensions.
c10::DimVector elementwise_result_strides(const Tensor& a, const Tensor& b, at::ScalarType type,
                                          at::IntArrayRef shape) {
  auto plain = [](const Tensor& t) {
    int64_t expected = 1;
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (t.stride(d) != expected) return false;
      expected *= std::max<int64_t>(t.size(d), 1);
    }
    return true;
  };
  if (plain(a) && plain(b)) return c10::contiguous_strides(shape);
  auto meta = [type](const Tensor& t) {
    return at::empty_strided(t.sizes(), t.strides(), at::TensorOptions().dtype(type).device(at::kMeta));
  };
  const Tensor result, meta_a = meta(a), meta_b = meta(b);
  at::TensorIterator iter =
      at::TensorIteratorConfig().add_output(result).add_const_input(meta_a).add_const_input(meta_b).build();
  const at::IntArrayRef strides = iter.output().strides();
  return {strides.begin(), strides.end()};
}

// PyTorch's type promotion of self and other (at::result_type's own
// kernel: the operator is composite, and dispatching it cost about as much
// as computing it, on every small operator).
at::ScalarType promoted(const Tensor& self, const Tensor& other) { return at::native::result_type(self, other); }

// out = a (op) b with xdal's add_<t>/mul_<t>, or, given `scale`, out = a +
// scale * b with axpby_<t> (1.1: add and sub with alpha); false when the
// case is left to the fallback (type promotion into another out type, ...).
// As in TensorIterator, an out that is resized here (a new result, an
// out= of the wrong shape) takes TensorIterator's strides; one of the right
// shape keeps its own. The kernel runs over the elements in memory order
// of operands laid out as the result.
//
// An undefined `out` asks for a new result, allocated here with
// TensorIterator's strides (a functional call: nothing to resize).
bool binary_native(const char* op, at::ScalarType type, const Tensor& self, const Tensor& other, Tensor& out,
                   const at::Scalar* scale = nullptr) {
  if (!native_arith_type(type)) return false;
  if (!out.defined()) {
    const Tensor& on = is_xdal(self) ? self : other;
    if (!native_operand(self, on) || !native_operand(other, on)) return false;
    const c10::DimVector shape = at::infer_size_dimvector(self.sizes(), other.sizes());
    // The kernel of empty_strided itself, not through the dispatcher: a
    // small operator's result costs a third less so.
    out = ops::empty_strided(shape, elementwise_result_strides(self, other, type, shape), type, std::nullopt,
                             on.device(), std::nullopt);
  } else {
    if (!is_xdal(out) || has_bits(out)) return false;
    check_write_overlap(out, {self, other});
    if (out.scalar_type() != type) return false;
    if (!native_operand(self, out) || !native_operand(other, out)) return false;
    const c10::DimVector shape = at::infer_size_dimvector(self.sizes(), other.sizes());
    if (at::native::resize_output(out, shape)) {  // resize_ keeps out's device itself
      const c10::DimVector strides = elementwise_result_strides(self, other, type, shape);
      if (!out.strides().equals(strides)) out.as_strided_(shape, strides);
    }
  }
  const c10::IntArrayRef shape = out.sizes();
  DeviceSwitch on(out.device().index());
  const int64_t n = out.numel();
  if (n == 0) return true;
  Tensor o = out.is_non_overlapping_and_dense() ? out : at::empty(shape, out.options().memory_format(at::MemoryFormat::Contiguous));
  Tensor made_a, made_b;
  const Tensor& a = operand(self, type, o, made_a);
  const Tensor& b = operand(other, type, o, made_b);
  // xdal accepts out == a or out == b, no other overlap.
  auto aliases_ok = [&](const Tensor& x) { return ptr_of(x) == ptr_of(o) || !ranges_overlap(o, x); };
  if (!aliases_ok(a) || !aliases_ok(b)) {
    o = at::empty_strided(shape, o.strides(), o.options());
  }

  void* pa = ptr_of(a);
  void* pb = ptr_of(b);
  void* po = ptr_of(o);
  uint64_t count = uint64_t(n);
  const ScalarBytes one = scalar_bytes(1, type);
  const ScalarBytes beta = scale ? scalar_bytes(*scale, type) : one;
  xdal_kernel_arg_t args[] = {{&pa, 8}, {&pb, 8}, {&po, 8}, {&count, 8}, {one.bytes, one.size}, {beta.bytes, beta.size}};
  const c10::Stream s = current_stream(out.device().index());
  launch(builtin(scale ? "axpby" : op, builtin_type_name(type)), s, n, true, args, scale ? 6 : 4);
  if (!o.is_same(out)) copy_same_device(o, out, s);
  return true;
}

bool same_shape_in_place(const Tensor& self, const Tensor& other) {
  return self.sizes().equals(at::infer_size_dimvector(self.sizes(), other.sizes()));
}

bool alpha_is_one(const at::Scalar& alpha) {
  if (alpha.isBoolean()) return alpha.toBool();
  if (alpha.isIntegral(false)) return alpha.toLong() == 1;
  if (alpha.isFloatingPoint()) return alpha.toDouble() == 1.0;
  return false;
}

// a + alpha * b: add_<t> when alpha is 1, else axpby_<t>. alpha is
// checked as the CPU checks it (no fractional alpha for integers).
bool add_native(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  const at::ScalarType type = promoted(self, other);
  at::native::alpha_check(type, alpha);
  return alpha_is_one(alpha) ? binary_native("add", type, self, other, out)
                             : binary_native("add", type, self, other, out, &alpha);
}

// a - alpha * b as a + (-alpha) * b (exact: negation), after the CPU's
// checks: no bool operand, no fractional alpha for integers.
bool sub_native(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  at::native::sub_check(self, other);
  const at::ScalarType type = promoted(self, other);
  at::native::alpha_check(type, alpha);
  const at::Scalar minus = -alpha;
  return binary_native("sub", type, self, other, out, &minus);
}

}  // namespace

namespace ops {

Tensor add(const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  Tensor out;  // binary_native allocates it
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
  Tensor out;  // binary_native allocates it
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
  Tensor out;  // binary_native allocates it
  if (binary_native("mul", promoted(self, other), self, other, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul_Tensor>::call(self, other);
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  if (same_shape_in_place(self, other) && binary_native("mul", promoted(self, other), self, other, self)) return self;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul__Tensor>::call(self, other);
}

Tensor& mul_out(const Tensor& self, const Tensor& other, Tensor& out) {
  if (binary_native("mul", promoted(self, other), self, other, out)) return out;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul_out>::call(self, other, out);
}

}  // namespace ops
}  // namespace torch_xdal
