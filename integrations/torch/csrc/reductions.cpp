// Reductions: sum over all dimensions on xdal's built-in sum_<t>, over
// one dimension on sum_dim_<t>; sums over several but not all dimensions
// go to the CPU fallback.
#include "xdal_torch.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/util/accumulate.h>

#include <algorithm>
#include <string>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;

// Full reductions on sum_<t>, reductions over one dimension on sum_dim_<t>
// (1.1); others go to the fallback.
Tensor sum_native(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  if (has_bits(self)) return Tensor();
  int64_t only = -1;  // the one dimension reduced, if not all are
  if (dim.has_value() && !dim->empty()) {
    // The CPU's checks: at most 64 dimensions, each named once.
    const auto seen = at::dim_list_to_bitset(*dim, self.dim());
    const int64_t reduced = int64_t(seen.count());
    if (reduced != std::max<int64_t>(self.dim(), 1)) {
      if (reduced != 1) return Tensor();
      only = 0;
      while (!seen[size_t(only)]) ++only;
    }
  }
  const at::ScalarType type =
      dtype ? *dtype : (at::isIntegralType(self.scalar_type(), true) ? at::kLong : self.scalar_type());
  if (!native_arith_type(type) || type == at::kBool) return Tensor();
  DeviceSwitch on(self.device().index());
  const c10::Stream s = current_stream(self.device().index());
  Tensor x = self.scalar_type() == type ? self : self.to(type);
  if (!x.is_contiguous()) x = x.contiguous();
  if (only >= 0) {
    // x is a dense [outer, reduce, inner] array.
    const int64_t outer = c10::multiply_integers(x.sizes().slice(0, size_t(only)));
    const int64_t reduce = x.size(only);
    const int64_t inner = c10::multiply_integers(x.sizes().slice(size_t(only) + 1));
    std::vector<int64_t> shape = x.sizes().vec();
    if (keepdim) {
      shape[size_t(only)] = 1;
    } else {
      shape.erase(shape.begin() + only);
    }
    Tensor out = at::empty(shape, self.options().dtype(type));
    if (out.numel() == 0) return out;
    if (reduce == 0) return fill_with(out, 0);
    void* px = ptr_of(x);
    void* po = ptr_of(out);
    uint64_t extents[3] = {uint64_t(outer), uint64_t(reduce), uint64_t(inner)};
    xdal_kernel_arg_t args[] = {{&px, 8}, {&po, 8}, {&extents[0], 8}, {&extents[1], 8}, {&extents[2], 8}};
    launch(builtin("sum_dim", builtin_type_name(type)), s, out.numel(), true, args, 5);
    return out;
  }
  Tensor out = at::empty({}, self.options().dtype(type));
  if (x.numel() == 0) {
    fill_with(out, 0);
  } else {
    void* px = ptr_of(x);
    void* po = ptr_of(out);
    uint64_t count = uint64_t(x.numel());
    xdal_kernel_arg_t args[] = {{&px, 8}, {&po, 8}, {&count, 8}};
    launch(builtin("sum", builtin_type_name(type)), s, x.numel(), true, args, 3);
  }
  if (keepdim) out = out.reshape(std::vector<int64_t>(size_t(self.dim()), 1));
  return out;
}

}  // namespace

namespace ops {

Tensor sum(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  Tensor r = sum_native(self, dim, keepdim, dtype);
  if (r.defined()) return r;
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sum_dim_IntList>::call(self, dim, keepdim, dtype);
}

Tensor& sum_out(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype,
                Tensor& out) {
  if (is_xdal(out) && out.scalar_type() == (dtype ? *dtype : out.scalar_type())) {
    Tensor r = sum_native(self, dim, keepdim, dtype ? dtype : std::optional<at::ScalarType>(out.scalar_type()));
    if (r.defined()) {
      at::native::resize_output(out, r.sizes());
      out.copy_(r);
      return out;
    }
  }
  return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sum_IntList_out>::call(self, dim, keepdim, dtype, out);
}

}  // namespace ops
}  // namespace torch_xdal
