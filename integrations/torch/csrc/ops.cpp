// ATen kernels of torch_xdal, registered for PrivateUse1: tensor creation,
// copies (host <-> device, device <-> device, dtype conversions), a few
// native kernels on xdal's built-in kernels, the views that need a backend
// kernel, and the CPU fallback for every other operator. No kernel here
// touches device memory from the host: data moves only through xdal copies
// and kernels launched through xdal.
#include "xdal_torch.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/add.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;

bool is_xdal(const Tensor& t) { return t.device().type() == kXdal; }

char* ptr_of(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// Same sizes and strides, elements filling one contiguous byte range: then
// element i of one is element i of the other, and a flat copy will do.
bool dense_same_layout(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.strides().equals(b.strides()) && a.is_non_overlapping_and_dense();
}

// Drops size-1 dimensions and merges dimensions that are contiguous in both
// tensors. False when more than kMaxDims remain.
bool fill_meta(at::IntArrayRef sizes, at::IntArrayRef sstr, at::IntArrayRef dstr, StridedMeta& m) {
  std::vector<int64_t> sz, ss, ds;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (!sz.empty() && ss.back() == sstr[i] * sizes[i] && ds.back() == dstr[i] * sizes[i]) {
      sz.back() *= sizes[i];
      ss.back() = sstr[i];
      ds.back() = dstr[i];
    } else {
      sz.push_back(sizes[i]);
      ss.push_back(sstr[i]);
      ds.push_back(dstr[i]);
    }
  }
  if (sz.empty()) {
    sz = {1};
    ss = {1};
    ds = {1};
  }
  if (sz.size() > size_t(kMaxDims)) return false;
  m.ndim = int32_t(sz.size());
  for (size_t i = 0; i < sz.size(); ++i) {
    m.sizes[i] = sz[i];
    m.src_strides[i] = ss[i];
    m.dst_strides[i] = ds[i];
  }
  return true;
}

void memcpy_on(void* dst, const void* src, size_t n, xdal_memcpy_kind_t kind, const c10::Stream& s) {
  if (n == 0) return;
  TX_CHECK(xdal_memcpy_async(dst, src, n, kind, native_stream(s)));
}

// Whether xdal's cast_strided_trunc_<s>_<d> (1.1) converts exactly as the
// CPU does: both types are xdal types, and the pair is none of those where
// PyTorch differs: it rounds f64, i64 and i32 to the narrow floats twice
// (through f32), and converts floats to uint8 through int64 (wrapping
// negative values, as NumPy does) where xdal saturates.
bool builtin_cast_ok(at::ScalarType s, at::ScalarType d) {
  using ST = at::ScalarType;
  if (!xdal_type_name(s) || !xdal_type_name(d)) return false;
  const bool narrow_d = d == ST::Half || d == ST::BFloat16 || d == ST::Float8_e4m3fn || d == ST::Float8_e5m2;
  if (narrow_d && (s == ST::Double || s == ST::Long || s == ST::Int)) return false;
  if (at::isFloatingType(s) && d == ST::Byte) return false;
  return true;
}

// The layout arguments of xdal's strided built-ins (1.1), passed by value:
// ndim, then sizes and strides (in elements) as arrays of kMaxDims.
struct BuiltinLayout {
  uint64_t ndim = 0;
  uint64_t sizes[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {};
};

BuiltinLayout builtin_layout(const StridedMeta& m) {
  BuiltinLayout l;
  l.ndim = uint64_t(m.ndim);
  for (int i = 0; i < m.ndim; ++i) {
    l.sizes[i] = uint64_t(m.sizes[i]);
    l.src_strides[i] = m.src_strides[i];
    l.dst_strides[i] = m.dst_strides[i];
  }
  return l;
}

bool ranges_overlap(const Tensor& a, const Tensor& b);

// Copies src (already expanded to dst's shape) into dst, both on the same
// xdal device, converting the element type; ignores conj/neg bits.
void copy_same_device(const Tensor& src, const Tensor& dst, const c10::Stream& s);

// A CPU tensor holding src's elements (same dtype, src's layout when dense).
Tensor raw_to_cpu(const Tensor& src) {
  const c10::Stream s = current_stream(src.device().index());
  Tensor c = src;
  if (!c.is_non_overlapping_and_dense()) {
    c = at::empty(src.sizes(), src.options().memory_format(at::MemoryFormat::Contiguous));
    copy_same_device(src, c, s);
  }
  Tensor out = at::empty_strided(c.sizes(), c.strides(), c.options().device(at::kCPU));
  memcpy_on(ptr_of(out), ptr_of(c), size_t(c.numel()) * c.element_size(), XDAL_MEMCPY_DEVICE_TO_HOST, s);
  synchronize_stream(s);
  return out;
}

// Writes the CPU tensor cpu (dst's dtype and shape) into dst's memory.
void raw_from_cpu(const Tensor& cpu, const Tensor& dst, bool non_blocking) {
  const c10::Stream s = current_stream(dst.device().index());
  if (!dst.is_non_overlapping_and_dense()) {
    Tensor tmp = at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
    raw_from_cpu(cpu, tmp, false);
    copy_same_device(tmp, dst, s);
    return;
  }
  Tensor c = cpu;
  if (!dense_same_layout(c, dst)) {
    c = at::empty_strided(dst.sizes(), dst.strides(), cpu.options());
    c.copy_(cpu);
  }
  memcpy_on(ptr_of(dst), ptr_of(c), size_t(c.numel()) * c.element_size(), XDAL_MEMCPY_HOST_TO_DEVICE, s);
  if (non_blocking && c.is_same(cpu) && is_pinned_ptr(c.const_data_ptr())) {
    host_record_stream(c.const_data_ptr(), s);  // the pinned block outlives the copy
  } else {
    synchronize_stream(s);  // pageable memory: the bytes must be read before we return
  }
}

void copy_same_device(const Tensor& src, const Tensor& dst, const c10::Stream& s) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const at::ScalarType st = src.scalar_type(), dt = dst.scalar_type();
  if (st == dt && dense_same_layout(src, dst)) {
    memcpy_on(ptr_of(dst), ptr_of(src), size_t(n) * dst.element_size(), XDAL_MEMCPY_DEVICE_TO_DEVICE, s);
    return;
  }
  StridedMeta m{};
  const bool layout_ok = fill_meta(dst.sizes(), src.strides(), dst.strides(), m);
  // xdal's strided built-ins (1.1), which every backend can run; they
  // refuse a source overlapping its destination, which the host kernel
  // copies through memmove.
  const bool builtin_ok = st == dt ? xdal_type_name(st) != nullptr : builtin_cast_ok(st, dt);
  if (layout_ok && builtin_ok && !ranges_overlap(src, dst)) {
    const std::string name = st == dt ? std::string("copy_strided_") + xdal_type_name(st)
                                      : std::string("cast_strided_trunc_") + xdal_type_name(st) + "_" + xdal_type_name(dt);
    BuiltinLayout l = builtin_layout(m);
    void* a = ptr_of(src);
    void* b = ptr_of(dst);
    xdal_kernel_arg_t args[] = {{&a, 8},       {&b, 8}, {&l.ndim, 8}, {l.sizes, sizeof l.sizes}, {l.src_strides, sizeof l.src_strides},
                                {l.dst_strides, sizeof l.dst_strides}};
    launch(builtin(name.c_str()), s, n, true, args, 6);
    return;
  }
  const bool convertible = st == dt || (host_convert_supported(st) && host_convert_supported(dt));
  if (convertible && layout_ok) {
    m.src_type = int32_t(st);
    m.dst_type = int32_t(dt);
    m.itemsize = int32_t(dst.element_size());
    m.numel = n;
    void* a = ptr_of(src);
    void* b = ptr_of(dst);
    xdal_kernel_arg_t args[] = {{&a, 8}, {&b, 8}, {&m, sizeof m}};
    launch(copy_kernel(), s, n, false, args, 3);
    return;
  }
  // Element types the host kernel does not convert (complex to real, the
  // unsigned 16-64 bit types, ...): through the CPU.
  Tensor cpu = raw_to_cpu(src).to(dt);
  raw_from_cpu(cpu, dst, false);
}

// src on device a, dst on device b: the copy runs on b's current stream,
// ordered after a's current stream, which in turn waits for the copy (so
// that src's memory is not reused before the copy has read it).
void copy_cross_device(const Tensor& src, const Tensor& dst) {
  const c10::DeviceIndex a = src.device().index(), b = dst.device().index();
  Tensor s = src;
  if (s.scalar_type() != dst.scalar_type() || !s.is_non_overlapping_and_dense()) {
    c10::DeviceGuard g(src.device());
    Tensor tmp = at::empty(s.sizes(), s.options().dtype(dst.scalar_type()).memory_format(at::MemoryFormat::Contiguous));
    copy_same_device(s, tmp, current_stream(a));
    s = tmp;
  }
  c10::DeviceGuard g(dst.device());
  Tensor d = dense_same_layout(s, dst) ? dst : at::empty_strided(s.sizes(), s.strides(), dst.options());
  const c10::Stream sa = current_stream(a), sb = current_stream(b);
  stream_wait_stream(sb, sa);
  memcpy_on(ptr_of(d), ptr_of(s), size_t(s.numel()) * s.element_size(), XDAL_MEMCPY_DEVICE_TO_DEVICE, sb);
  stream_wait_stream(sa, sb);
  if (!d.is_same(dst)) copy_same_device(d, dst, sb);
}

Tensor xdal_copy_from(const Tensor& self, const Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "xdal: copy of an undefined tensor");
  if (dst.numel() == 0) return dst;
  Tensor src = self.sizes().equals(dst.sizes()) ? self : self.expand(dst.sizes());

  if (src.is_conj() != dst.is_conj() || src.is_neg() != dst.is_neg()) {
    // Materialize the values on the CPU, where copy_ resolves the bits.
    Tensor v;
    if (is_xdal(src)) {
      c10::DeviceGuard g(src.device());
      v = raw_to_cpu(src);
      v._set_conj(src.is_conj());
      v._set_neg(src.is_neg());
    } else {
      v = src;
    }
    if (!is_xdal(dst)) {
      dst.copy_(v);
    } else {
      c10::DeviceGuard g(dst.device());
      Tensor tmp = at::empty(dst.sizes(), dst.options().device(at::kCPU));
      tmp._set_conj(dst.is_conj());
      tmp._set_neg(dst.is_neg());
      tmp.copy_(v);
      tmp._set_conj(false);
      tmp._set_neg(false);
      raw_from_cpu(tmp, dst, false);
    }
    return dst;
  }

  if (is_xdal(src) && is_xdal(dst)) {
    if (src.device() == dst.device()) {
      c10::DeviceGuard g(dst.device());
      copy_same_device(src, dst, current_stream(dst.device().index()));
    } else {
      copy_cross_device(src, dst);
    }
  } else if (src.is_cpu() && is_xdal(dst)) {
    c10::DeviceGuard g(dst.device());
    Tensor c = src.scalar_type() == dst.scalar_type() ? src : src.to(dst.scalar_type());
    raw_from_cpu(c, dst, non_blocking);
  } else if (is_xdal(src) && dst.is_cpu()) {
    c10::DeviceGuard g(src.device());
    if (src.scalar_type() == dst.scalar_type() && dense_same_layout(src, dst)) {
      const c10::Stream s = current_stream(src.device().index());
      memcpy_on(ptr_of(dst), ptr_of(src), size_t(src.numel()) * src.element_size(), XDAL_MEMCPY_DEVICE_TO_HOST, s);
      if (non_blocking && is_pinned_ptr(dst.const_data_ptr())) {
        host_record_stream(dst.const_data_ptr(), s);
      } else {
        synchronize_stream(s);
      }
    } else {
      dst.copy_(raw_to_cpu(src));
    }
  } else {
    TORCH_CHECK(false, "xdal: copy from ", src.device(), " to ", dst.device(), " is not supported");
  }
  return dst;
}

Tensor xdal_copy_from_and_resize(const Tensor& self, const Tensor& dst) {
  dst.resize_(self.sizes());
  return xdal_copy_from(self, dst, false);
}

// ---------------------------------------------------------------- creation

Tensor xdal_empty(at::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                  std::optional<at::Device> device, std::optional<bool> pin_memory,
                  std::optional<at::MemoryFormat> memory_format) {
  const at::Device d = c10::device_or_default(device);
  TORCH_CHECK(d.type() == kXdal, "xdal: empty on ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided, "xdal: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
  c10::DeviceGuard g(d);
  return at::detail::empty_generic(size, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

Tensor xdal_empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                          std::optional<at::Layout> layout, std::optional<at::Device> device,
                          std::optional<bool> pin_memory) {
  const at::Device d = c10::device_or_default(device);
  TORCH_CHECK(d.type() == kXdal, "xdal: empty_strided on ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided, "xdal: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
  c10::DeviceGuard g(d);
  return at::detail::empty_strided_generic(size, stride, device_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

const Tensor& xdal_resize_(const Tensor& self, c10::SymIntArrayRef size_sym,
                           std::optional<at::MemoryFormat> memory_format) {
  const at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (!self.sizes().equals(size) || !self.is_contiguous()) impl->set_sizes_contiguous(size);
  const int64_t numel = impl->numel();
  if (numel > 0) {
    const size_t needed = size_t(impl->storage_offset() + numel) * self.element_size();
    const c10::Storage& storage = impl->unsafe_storage();
    if (needed > storage.nbytes()) {
      c10::DeviceGuard g(self.device());
      resize_storage_bytes(storage.unsafeGetStorageImpl(), needed);
    }
  }
  if (memory_format && *memory_format != at::MemoryFormat::Preserve) impl->empty_tensor_restride(*memory_format);
  return self;
}

Tensor xdal_as_strided(const Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                       std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> off;
  if (storage_offset) off = storage_offset->expect_int();
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride), off);
}

Tensor xdal_view(const Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

Tensor xdal_reshape_alias(const Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

Tensor& xdal_set_storage(Tensor& self, at::Storage source, int64_t offset, at::IntArrayRef size,
                         at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == kXdal || source.nbytes() == 0, "xdal: set_ with a storage on ",
              source.device());
  return at::native::set_storage_cpu_(self, std::move(source), offset, size, stride);
}

Tensor& xdal_set_source_storage(Tensor& self, at::Storage source) {
  const int64_t n = int64_t(source.nbytes()) / int64_t(self.element_size());
  return xdal_set_storage(self, std::move(source), 0, {n}, {});
}

Tensor& xdal_set_source_tensor(Tensor& self, const Tensor& source) {
  if (self.is_same(source)) return self;
  return xdal_set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Scalar xdal_local_scalar_dense(const Tensor& self) {
  c10::DeviceGuard g(self.device());
  Tensor v = raw_to_cpu(self);
  v._set_conj(self.is_conj());
  v._set_neg(self.is_neg());
  return at::_local_scalar_dense(v.resolve_conj().resolve_neg());
}

// ---------------------------------------------------------------- fallback

std::mutex counts_mutex;
std::unordered_map<std::string, int64_t> counts;

void count_fallback(const std::string& name) {
  std::lock_guard<std::mutex> g(counts_mutex);
  counts[name]++;
}

void xdal_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  {
    const auto& name = op.schema().operator_name();
    count_fallback(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
  }
  const auto& schema_args = op.schema().arguments();
  const size_t n = schema_args.size();
  const size_t base = stack->size() - n;
  // The device the operator runs for: its xdal tensors' (all on one
  // device, as TensorIterator demands of native kernels), or a device argument.
  std::optional<c10::Device> device;
  auto note = [&](const Tensor& t) {
    if (!t.defined() || !is_xdal(t)) return;
    if (!device) {
      device = t.device();
    } else {
      TORCH_CHECK(*device == t.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
                  *device, " and ", t.device(), "!");
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    if (v.isTensor()) {
      note(v.toTensor());
    } else if (v.isTensorList()) {
      for (const Tensor& t : v.toTensorList().vec()) note(t);
    } else if (v.isOptionalTensorList()) {
      for (const auto& t : v.toOptionalTensorList().vec())
        if (t) note(*t);
    }
  }
  for (size_t i = 0; i < n && !device; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    if (v.isDevice() && v.toDevice().type() == kXdal) device = v.toDevice();
  }
  // Random operators draw from the xdal generator (given or the device's
  // default), through the CPU generator it owns, under its lock.
  std::vector<std::unique_lock<std::mutex>> locks;
  for (size_t i = 0; i < n; ++i) {
    c10::TypePtr type = schema_args[i].type();
    if (type->kind() == c10::TypeKind::OptionalType) type = type->castRaw<c10::OptionalType>()->getElementType();
    if (type->kind() != c10::TypeKind::GeneratorType) continue;
    c10::IValue& v = (*stack)[base + i];
    at::Generator gen;
    if (v.isNone()) {
      if (!device) continue;
      gen = default_generator(device->index() < 0 ? current_device() : device->index());
    } else {
      gen = v.toGenerator();
      if (gen.device().type() != kXdal) continue;
    }
    locks.emplace_back(gen.mutex());
    v = c10::IValue(cpu_generator_of(gen));
  }
  c10::OptionalDeviceGuard g;
  if (device && device->index() >= 0) g.reset_device(*device);
  at::native::cpu_fallback(op, stack);
}

template <typename Op, typename... Args>
decltype(auto) fallback_call(Args&&... args) {
  return at::native::call_fallback_fn<&xdal_fallback, Op>::call(std::forward<Args>(args)...);
}

// ---------------------------------------------------------------- fill, zero

bool has_bits(const Tensor& t) { return t.is_conj() || t.is_neg(); }

// The bytes of `value` as an element of `type`, converted as the CPU does.
struct ScalarBytes {
  unsigned char bytes[16] = {0};
  size_t size = 0;
};

ScalarBytes scalar_bytes(const at::Scalar& value, at::ScalarType type) {
  ScalarBytes r;
  Tensor v = at::scalar_tensor(value, at::TensorOptions().dtype(type));
  r.size = v.element_size();
  std::memcpy(r.bytes, v.const_data_ptr(), r.size);
  return r;
}

Tensor& fill_with(Tensor& self, const at::Scalar& value) {
  const int64_t n = self.numel();
  if (n == 0) return self;
  c10::DeviceGuard g(self.device());
  const c10::Stream s = current_stream(self.device().index());
  // The element's bytes, converted exactly as the CPU's fill_ converts.
  const ScalarBytes scalar = scalar_bytes(value, self.scalar_type());
  const unsigned char* bytes = scalar.bytes;
  const size_t item = scalar.size;
  const char* tname = xdal_type_name(self.scalar_type());
  if (tname && self.is_non_overlapping_and_dense()) {
    const std::string name = std::string("fill_") + tname;
    void* dst = ptr_of(self);
    uint64_t count = uint64_t(n);
    xdal_kernel_arg_t args[] = {{&dst, 8}, {&count, 8}, {bytes, item}};
    launch(builtin(name.c_str()), s, n, true, args, 3);
    return self;
  }
  StridedMeta sm{};
  const bool layout_ok = fill_meta(self.sizes(), self.strides(), self.strides(), sm);
  if (tname && layout_ok) {
    // fill_strided_<t> (xdal 1.1).
    const std::string name = std::string("fill_strided_") + tname;
    BuiltinLayout l = builtin_layout(sm);
    void* dst = ptr_of(self);
    xdal_kernel_arg_t args[] = {{&dst, 8}, {&l.ndim, 8}, {l.sizes, sizeof l.sizes}, {l.dst_strides, sizeof l.dst_strides},
                                {bytes, item}};
    launch(builtin(name.c_str()), s, n, true, args, 5);
    return self;
  }
  FillMeta m{};
  if (layout_ok) {
    m.ndim = sm.ndim;
    for (int i = 0; i < sm.ndim; ++i) {
      m.sizes[i] = sm.sizes[i];
      m.strides[i] = sm.src_strides[i];
    }
    m.itemsize = int32_t(item);
    m.numel = n;
    std::memcpy(m.value, bytes, item);
    void* dst = ptr_of(self);
    xdal_kernel_arg_t args[] = {{&dst, 8}, {&m, sizeof m}};
    launch(fill_kernel(), s, n, false, args, 2);
    return self;
  }
  Tensor tmp = at::empty(self.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
  fill_with(tmp, value);
  copy_same_device(tmp, self, s);
  return self;
}

Tensor& xdal_fill_scalar(Tensor& self, const at::Scalar& value) {
  if (has_bits(self)) return fallback_call<at::_ops::fill__Scalar>(self, value);
  return fill_with(self, value);
}

Tensor& xdal_fill_tensor(Tensor& self, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  if (has_bits(self)) return fallback_call<at::_ops::fill__Tensor>(self, value);
  return fill_with(self, value.item());
}

Tensor& xdal_zero_(Tensor& self) {
  const int64_t n = self.numel();
  if (n == 0) return self;
  if (!self.is_non_overlapping_and_dense()) return fill_with(self, 0);
  c10::DeviceGuard g(self.device());
  const c10::Stream s = current_stream(self.device().index());
  TX_CHECK(xdal_memset_async(ptr_of(self), 0, size_t(n) * self.element_size(), native_stream(s)));
  return self;
}

// ---------------------------------------------------------------- add, mul

bool native_arith_type(at::ScalarType t) {
  switch (t) {
    case at::kDouble: case at::kFloat: case at::kHalf: case at::kBFloat16: case at::kLong: case at::kInt:
    case at::kShort: case at::kChar: case at::kByte: case at::kBool:
      return true;
    default:
      return false;
  }
}

bool ranges_overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  if (!a.storage().is_alias_of(b.storage())) return false;
  return at::get_overlap_status(a, b) != at::MemOverlapStatus::No;
}

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
  const std::string name = std::string(scale ? "axpby" : op) + "_" + xdal_type_name(type);
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

Tensor xdal_add(const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  Tensor out = new_result(self, other);
  if (add_native(self, other, alpha, out)) return out;
  return fallback_call<at::_ops::add_Tensor>(self, other, alpha);
}

Tensor& xdal_add_(Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  if (same_shape_in_place(self, other) && add_native(self, other, alpha, self)) return self;
  return fallback_call<at::_ops::add__Tensor>(self, other, alpha);
}

Tensor& xdal_add_out(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  if (add_native(self, other, alpha, out)) return out;
  return fallback_call<at::_ops::add_out>(self, other, alpha, out);
}

Tensor xdal_sub(const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  Tensor out = new_result(self, other);
  if (sub_native(self, other, alpha, out)) return out;
  return fallback_call<at::_ops::sub_Tensor>(self, other, alpha);
}

Tensor& xdal_sub_(Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  if (same_shape_in_place(self, other) && sub_native(self, other, alpha, self)) return self;
  return fallback_call<at::_ops::sub__Tensor>(self, other, alpha);
}

Tensor& xdal_sub_out(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  if (sub_native(self, other, alpha, out)) return out;
  return fallback_call<at::_ops::sub_out>(self, other, alpha, out);
}

Tensor xdal_mul(const Tensor& self, const Tensor& other) {
  Tensor out = new_result(self, other);
  if (binary_native("mul", self, other, out)) return out;
  return fallback_call<at::_ops::mul_Tensor>(self, other);
}

Tensor& xdal_mul_(Tensor& self, const Tensor& other) {
  if (same_shape_in_place(self, other) && binary_native("mul", self, other, self)) return self;
  return fallback_call<at::_ops::mul__Tensor>(self, other);
}

Tensor& xdal_mul_out(const Tensor& self, const Tensor& other, Tensor& out) {
  if (binary_native("mul", self, other, out)) return out;
  return fallback_call<at::_ops::mul_out>(self, other, out);
}

// ---------------------------------------------------------------- sum

// Full reductions on sum_<t>, reductions over one dimension on sum_dim_<t>
// (1.1); others go to the fallback.
Tensor sum_native(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  if (has_bits(self)) return Tensor();
  int64_t only = -1;  // the one dimension reduced, if not all are
  if (dim.has_value() && !dim->empty()) {
    std::vector<bool> seen(size_t(std::max<int64_t>(self.dim(), 1)), false);
    for (int64_t d : *dim) seen[size_t(c10::maybe_wrap_dim(d, self.dim()))] = true;
    const int64_t reduced = std::count(seen.begin(), seen.end(), true);
    if (reduced != int64_t(seen.size())) {
      if (reduced != 1) return Tensor();
      only = std::find(seen.begin(), seen.end(), true) - seen.begin();
    }
  }
  const at::ScalarType type =
      dtype ? *dtype : (at::isIntegralType(self.scalar_type(), true) ? at::kLong : self.scalar_type());
  if (!native_arith_type(type) || type == at::kBool) return Tensor();
  c10::DeviceGuard g(self.device());
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
    const std::string name = std::string("sum_dim_") + xdal_type_name(type);
    void* px = ptr_of(x);
    void* po = ptr_of(out);
    uint64_t extents[3] = {uint64_t(outer), uint64_t(reduce), uint64_t(inner)};
    xdal_kernel_arg_t args[] = {{&px, 8}, {&po, 8}, {&extents[0], 8}, {&extents[1], 8}, {&extents[2], 8}};
    launch(builtin(name.c_str()), s, out.numel(), true, args, 5);
    return out;
  }
  Tensor out = at::empty({}, self.options().dtype(type));
  if (x.numel() == 0) {
    fill_with(out, 0);
  } else {
    const std::string name = std::string("sum_") + xdal_type_name(type);
    void* px = ptr_of(x);
    void* po = ptr_of(out);
    uint64_t count = uint64_t(x.numel());
    xdal_kernel_arg_t args[] = {{&px, 8}, {&po, 8}, {&count, 8}};
    launch(builtin(name.c_str()), s, x.numel(), true, args, 3);
  }
  if (keepdim) out = out.reshape(std::vector<int64_t>(size_t(self.dim()), 1));
  return out;
}

Tensor xdal_sum(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  Tensor r = sum_native(self, dim, keepdim, dtype);
  if (r.defined()) return r;
  return fallback_call<at::_ops::sum_dim_IntList>(self, dim, keepdim, dtype);
}

Tensor& xdal_sum_out(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, Tensor& out) {
  if (is_xdal(out) && out.scalar_type() == (dtype ? *dtype : out.scalar_type())) {
    Tensor r = sum_native(self, dim, keepdim, dtype ? dtype : std::optional<at::ScalarType>(out.scalar_type()));
    if (r.defined()) {
      at::native::resize_output(out, r.sizes());
      out.copy_(r);
      return out;
    }
  }
  return fallback_call<at::_ops::sum_IntList_out>(self, dim, keepdim, dtype, out);
}

// ---------------------------------------------------------------- mm

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
  c10::DeviceGuard g(self.device());
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
  const std::string name = std::string("matmul_") + xdal_type_name(type);
  void* pa = ptr_of(a);
  void* pb = ptr_of(b);
  void* pc = ptr_of(c);
  uint64_t um = uint64_t(m), un = uint64_t(n), uk = uint64_t(k);
  xdal_kernel_arg_t args[] = {{&pa, 8}, {&pb, 8}, {&pc, 8}, {&um, 8}, {&un, 8}, {&uk, 8}};
  const c10::Stream s = current_stream(self.device().index());
  launch(builtin(name.c_str()), s, m * n, true, args, 6);
  if (!direct) copy_same_device(c, out, s);
  return true;
}

Tensor xdal_mm(const Tensor& self, const Tensor& mat2) {
  Tensor out = at::empty({0}, self.options());
  if (mm_native(self, mat2, out)) return out;
  return fallback_call<at::_ops::mm>(self, mat2);
}

Tensor& xdal_mm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  if (mm_native(self, mat2, out)) return out;
  return fallback_call<at::_ops::mm_out>(self, mat2, out);
}

// ---------------------------------------------------------------- convolution

// PyTorch sends convolutions on a PrivateUse1 device to these two operators,
// which have no CPU kernel for the generic fallback to call: they run
// aten::convolution(_backward) on CPU copies, as the fallback would.
Tensor xdal_convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                        at::IntArrayRef output_padding, int64_t groups) {
  count_fallback("aten::convolution_overrideable");
  c10::DeviceGuard g(input.device());
  std::optional<Tensor> b;
  if (bias && bias->defined()) b = bias->cpu();
  Tensor r = at::convolution(input.cpu(), weight.cpu(), b, stride, padding, dilation, transposed, output_padding,
                             groups);
  return r.to(input.device());
}

std::tuple<Tensor, Tensor, Tensor> xdal_convolution_backward(const Tensor& grad_output, const Tensor& input,
                                                             const Tensor& weight, at::IntArrayRef stride,
                                                             at::IntArrayRef padding, at::IntArrayRef dilation,
                                                             bool transposed, at::IntArrayRef output_padding,
                                                             int64_t groups, std::array<bool, 3> output_mask) {
  count_fallback("aten::convolution_backward_overrideable");
  c10::DeviceGuard g(input.device());
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  std::vector<int64_t> bias_sizes{out_channels};
  auto [gi, gw, gb] = at::convolution_backward(grad_output.cpu(), input.cpu(), weight.cpu(),
                                               output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt,
                                               stride, padding, dilation, transposed, output_padding, groups,
                                               output_mask);
  auto back = [&](const Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(gi), back(gw), back(gb)};
}

void xdal_record_stream(Tensor& self, c10::Stream stream) {
  record_stream(self.storage().data_ptr(), stream);
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> fallback_counts() {
  std::lock_guard<std::mutex> g(counts_mutex);
  return {counts.begin(), counts.end()};
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> g(counts_mutex);
  counts.clear();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", xdal_empty);
  m.impl("empty_strided", xdal_empty_strided);
  m.impl("resize_", xdal_resize_);
  m.impl("as_strided", xdal_as_strided);
  m.impl("view", xdal_view);
  m.impl("_reshape_alias", xdal_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("set_.source_Storage", xdal_set_source_storage);
  m.impl("set_.source_Storage_storage_offset", xdal_set_storage);
  m.impl("set_.source_Tensor", xdal_set_source_tensor);
  m.impl("_copy_from", xdal_copy_from);
  m.impl("_copy_from_and_resize", xdal_copy_from_and_resize);
  m.impl("_local_scalar_dense", xdal_local_scalar_dense);
  m.impl("fill_.Scalar", xdal_fill_scalar);
  m.impl("fill_.Tensor", xdal_fill_tensor);
  m.impl("zero_", xdal_zero_);
  m.impl("add.Tensor", xdal_add);
  m.impl("add_.Tensor", xdal_add_);
  m.impl("add.out", xdal_add_out);
  m.impl("sub.Tensor", xdal_sub);
  m.impl("sub_.Tensor", xdal_sub_);
  m.impl("sub.out", xdal_sub_out);
  m.impl("mul.Tensor", xdal_mul);
  m.impl("mul_.Tensor", xdal_mul_);
  m.impl("mul.out", xdal_mul_out);
  m.impl("sum.dim_IntList", xdal_sum);
  m.impl("sum.IntList_out", xdal_sum_out);
  m.impl("mm", xdal_mm);
  m.impl("mm.out", xdal_mm_out);
  m.impl("convolution_overrideable", xdal_convolution);
  m.impl("convolution_backward_overrideable", xdal_convolution_backward);
  m.impl("record_stream", xdal_record_stream);
  // The CPU's fused kernel rather than PyTorch's decomposition for other
  // backends, so that results match the CPU's to the last bit.
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&xdal_fallback>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&xdal_fallback>());
  m.impl("addr", torch::CppFunction::makeFromBoxedFunction<&xdal_fallback>());
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

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&xdal_fallback>());
}

}  // namespace torch_xdal
