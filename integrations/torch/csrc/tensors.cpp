// xdal tensors: creation (empty, empty_strided), resize_, the views and
// set_ that need a PrivateUse1 kernel (PyTorch's metadata-only ones),
// record_stream, and the tensor predicates the other kernels share.
#include "xdal_torch.h"

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>

#include <utility>

namespace torch_xdal {

using at::Tensor;

bool is_xdal(const Tensor& t) { return t.device().type() == kXdal; }

char* ptr_of(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

bool has_bits(const Tensor& t) { return t.is_conj() || t.is_neg(); }

bool ranges_overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  if (!a.storage().is_alias_of(b.storage())) return false;
  return at::get_overlap_status(a, b) != at::MemOverlapStatus::No;
}

void check_write_overlap(const Tensor& out, at::ArrayRef<Tensor> inputs) {
  if (!out.defined() || !is_xdal(out)) return;
  at::assert_no_internal_overlap(out);
  for (const Tensor& input : inputs) {
    if (input.defined() && is_xdal(input)) at::assert_no_partial_overlap(out, input);
  }
}

namespace {

// torch.use_deterministic_algorithms(True) (with fill_uninitialized_memory,
// its default) has new memory filled, as on the CPU and CUDA: NaN for
// floating point and complex types, the largest value for integers.
bool fill_uninitialized() {
  const auto& context = at::globalContext();
  return context.deterministicAlgorithms() && context.deterministicFillUninitializedMemory();
}

}  // namespace

namespace ops {

Tensor empty(at::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
             std::optional<at::Device> device, std::optional<bool> pin_memory,
             std::optional<at::MemoryFormat> memory_format) {
  const at::Device d = c10::device_or_default(device);
  TORCH_CHECK(d.type() == kXdal, "xdal: empty on ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided, "xdal: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
  DeviceSwitch on(d.index());
  Tensor t = at::detail::empty_generic(size, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                       c10::dtype_or_default(dtype), memory_format);
  if (fill_uninitialized()) at::native::fill_empty_deterministic_(t);
  return t;
}

Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                     std::optional<at::Layout> layout, std::optional<at::Device> device,
                     std::optional<bool> pin_memory) {
  const at::Device d = c10::device_or_default(device);
  TORCH_CHECK(d.type() == kXdal, "xdal: empty_strided on ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided, "xdal: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
  DeviceSwitch on(d.index());
  Tensor t = at::detail::empty_strided_generic(size, stride, device_allocator(),
                                               c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                               c10::dtype_or_default(dtype));
  if (fill_uninitialized()) at::native::fill_empty_deterministic_(t);
  return t;
}

const Tensor& resize_(const Tensor& self, c10::SymIntArrayRef size_sym,
                      std::optional<at::MemoryFormat> memory_format) {
  const at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);
  TORCH_CHECK(!memory_format || *memory_format != at::MemoryFormat::Preserve, "Unsupported memory format",
              *memory_format);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  // As PyTorch's resize_: a tensor that has the size asked keeps its strides
  // (an out= view is then written in place), any other becomes contiguous.
  const bool resized = !self.sizes().equals(size);
  if (resized) impl->set_sizes_contiguous(size);
  const int64_t numel = impl->numel();
  const int64_t old_nbytes = static_cast<int64_t>(impl->unsafe_storage().nbytes());
  if (resized && numel > 0) {
    const size_t needed = size_t(impl->storage_offset() + numel) * self.element_size();
    const c10::Storage& storage = impl->unsafe_storage();
    if (needed > storage.nbytes()) {
      DeviceSwitch on(self.device().index());
      resize_storage_bytes(storage.unsafeGetStorageImpl(), needed);
    }
  }
  if (memory_format && *memory_format != at::MemoryFormat::Preserve) impl->empty_tensor_restride(*memory_format);
  // What the storage gained is filled as empty() fills new memory.
  if (fill_uninitialized()) {
    DeviceSwitch on(self.device().index());
    at::native::fill_resize_deterministic_(self, old_nbytes);
  }
  return self;
}

Tensor as_strided(const Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                  std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> off;
  if (storage_offset) off = storage_offset->expect_int();
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride), off);
}

Tensor view(const Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

Tensor reshape_alias(const Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

Tensor& set_storage(Tensor& self, at::Storage source, int64_t offset, at::IntArrayRef size,
                    at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == kXdal || source.nbytes() == 0, "xdal: set_ with a storage on ",
              source.device());
  return at::native::set_storage_cpu_(self, std::move(source), offset, size, stride);
}

Tensor& set_source_storage(Tensor& self, at::Storage source) {
  const int64_t n = int64_t(source.nbytes()) / int64_t(self.element_size());
  return set_storage(self, std::move(source), 0, {n}, {});
}

Tensor& set_source_tensor(Tensor& self, const Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

void record_stream(Tensor& self, c10::Stream stream) {
  torch_xdal::record_stream(self.storage().data_ptr(), stream);
}

}  // namespace ops
}  // namespace torch_xdal
