// fill_ and zero_ on xdal's built-ins: fill_<bits> on dense tensors,
// fill_strided_<bits> on strided ones (the element's bytes as an integer
// of their size, whatever the dtype), xdal_memset_async for zero_; and the
// bytes of a scalar as an element of a given type, converted as the CPU
// converts it.
#include "xdal_torch.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fill.h>
#include <ATen/ops/scalar_tensor.h>

#include <cstring>
#include <string>
#include <vector>

namespace torch_xdal {

using at::Tensor;

namespace {

template <typename T>
ScalarBytes bytes_of(T value) {
  ScalarBytes r;
  r.size = sizeof(T);
  std::memcpy(r.bytes, &value, sizeof(T));
  return r;
}

}  // namespace

ScalarBytes scalar_bytes(const at::Scalar& value, at::ScalarType type) {
  // A real scalar as fill_ converts it (Scalar::to, which refuses what
  // overflows), without a CPU tensor: every native add and mul asks.
  if (!value.isComplex()) {
    switch (type) {
      case at::kDouble: return bytes_of(value.to<double>());
      case at::kFloat: return bytes_of(value.to<float>());
      case at::kHalf: return bytes_of(value.to<c10::Half>());
      case at::kBFloat16: return bytes_of(value.to<c10::BFloat16>());
      case at::kLong: return bytes_of(value.to<int64_t>());
      case at::kInt: return bytes_of(value.to<int32_t>());
      case at::kShort: return bytes_of(value.to<int16_t>());
      case at::kChar: return bytes_of(value.to<int8_t>());
      case at::kByte: return bytes_of(value.to<uint8_t>());
      case at::kBool: return bytes_of(value.to<bool>());
      default: break;
    }
  }
  ScalarBytes r;
  Tensor v = at::scalar_tensor(value, at::TensorOptions().dtype(type));
  r.size = v.element_size();
  std::memcpy(r.bytes, v.const_data_ptr(), r.size);
  return r;
}

namespace {

// The elements of `t` that are distinct in memory along its stride-0
// dimensions (an expand): those dimensions dropped, or t itself.
Tensor without_broadcast_dims(const Tensor& t) {
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) == 0) continue;
    sizes.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
  if (int64_t(sizes.size()) == t.dim()) return t;
  return t.as_strided(sizes, strides, t.storage_offset());
}

}  // namespace

Tensor& fill_with(Tensor& self, const at::Scalar& value) {
  const int64_t n = self.numel();
  if (n == 0) return self;
  // PyTorch fills a tensor whose elements share memory (one value goes to
  // every location); xdal's strided fill refuses two writes to one element
  // through a stride of 0, so those dimensions are dropped first.
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    Tensor distinct = without_broadcast_dims(self);
    fill_with(distinct, value);
    return self;
  }
  DeviceSwitch on(self.device().index());
  const c10::Stream s = current_stream(self.device().index());
  // The element's bytes, converted exactly as the CPU's fill_ converts, are
  // stored as an integer of their size: fill_<bits> on dense tensors,
  // fill_strided_<bits> on strided ones (1.1); 16-byte elements as two
  // 8-byte halves, each a strided fill of every other 8 bytes.
  const ScalarBytes scalar = scalar_bytes(value, self.scalar_type());
  const size_t unit = scalar.size == 16 ? 8 : scalar.size;
  const char* bits = bits_type_name(unit);
  TORCH_CHECK(bits, "xdal: no fill for elements of ", scalar.size, " bytes (", self.scalar_type(), ")");
  if (scalar.size == unit && self.is_non_overlapping_and_dense()) {
    void* dst = ptr_of(self);
    uint64_t count = uint64_t(n);
    xdal_kernel_arg_t args[] = {{&dst, 8}, {&count, 8}, {scalar.bytes, unit}};
    launch(builtin("fill", bits), s, n, true, args, 3);
    return self;
  }
  const int64_t scale = int64_t(scalar.size / unit);
  std::vector<int64_t> strides = self.strides().vec();
  for (auto& x : strides) x *= scale;
  StridedMeta sm{};
  if (fill_meta(self.sizes(), strides, strides, sm)) {
    BuiltinLayout l = builtin_layout(sm);
    for (int64_t half = 0; half < scale; ++half) {
      void* dst = ptr_of(self) + half * int64_t(unit);
      xdal_kernel_arg_t args[] = {{&dst, 8}, {&l.ndim, 8}, {l.sizes, sizeof l.sizes}, {l.dst_strides, sizeof l.dst_strides},
                                  {scalar.bytes + half * int64_t(unit), unit}};
      launch(builtin("fill_strided", bits), s, n, true, args, 5);
    }
    return self;
  }
  // More dimensions than the strided fill takes, none of them mergeable.
  Tensor tmp = at::empty(self.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
  fill_with(tmp, value);
  copy_same_device(tmp, self, s);
  return self;
}

namespace ops {

Tensor& fill_scalar(Tensor& self, const at::Scalar& value) {
  if (has_bits(self)) return at::native::call_fallback_fn<&cpu_fallback, at::_ops::fill__Scalar>::call(self, value);
  return fill_with(self, value);
}

Tensor& fill_tensor(Tensor& self, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  if (has_bits(self)) return at::native::call_fallback_fn<&cpu_fallback, at::_ops::fill__Tensor>::call(self, value);
  return fill_with(self, value.item());
}

Tensor& zero_(Tensor& self) {
  const int64_t n = self.numel();
  if (n == 0) return self;
  if (!self.is_non_overlapping_and_dense()) return fill_with(self, 0);
  DeviceSwitch on(self.device().index());
  const c10::Stream s = current_stream(self.device().index());
  TX_CHECK(xdal_memset_async(ptr_of(self), 0, size_t(n) * self.element_size(), native_stream(s)));
  return self;
}

}  // namespace ops
}  // namespace torch_xdal
