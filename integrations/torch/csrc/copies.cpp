// Copies: _copy_from (host <-> device, device <-> device, dtype
// conversions, any strides), _copy_from_and_resize and _local_scalar_dense
// (item()). Data moves only through xdal copies and kernels launched
// through xdal, never through host accesses to device memory.
#include "xdal_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <string>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;

// Same sizes and strides, elements filling one contiguous byte range: then
// element i of one is element i of the other, and a flat copy will do.
bool dense_same_layout(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.strides().equals(b.strides()) && a.is_non_overlapping_and_dense();
}

void memcpy_on(void* dst, const void* src, size_t n, xdal_memcpy_kind_t kind, const c10::Stream& s) {
  if (n == 0) return;
  TX_CHECK(xdal_memcpy_async(dst, src, n, kind, native_stream(s)));
}

// Whether xdal's cast_strided_trunc_<s>_<d> (1.1) converts exactly as the
// CPU does: both types are xdal types, and the pair is none of those where
// PyTorch differs. xdal's built-ins saturate (float to integer, to
// float8_e4m3fn: NaN beyond the range; NaN to float8_e5m2: 0x7E) and
// round once; PyTorch's CPU
// converts with C++'s conversion of the machine it runs on (an out-of-range
// float to int32 or int64 is INT_MIN on x86, to the narrower integers it
// goes through int32 and wraps, to uint8 through int64), saturates
// float8_e4m3fn to 448, and rounds f64, i64 and i32 to the narrow floats
// twice (through f32). Those pairs run the host conversion kernel, which
// converts with c10::convert, the CPU's own element conversion, or go
// through the CPU where the backend runs no host code. Left as it
// is: the bits of a NaN (f32 NaN to bfloat16 is 0xFFFF on the CPU's
// vector path, 0x7FC0 on its scalar path and on xdal; both NaN).
bool builtin_cast_ok(at::ScalarType s, at::ScalarType d) {
  using ST = at::ScalarType;
  if (!builtin_type_name(s) || !builtin_type_name(d)) return false;
  if (s == ST::Bool || d == ST::Bool) return true;
  if (at::isFloatingType(s) && at::isIntegralType(d, /*includeBool=*/false)) return false;
  if (d == ST::Float8_e4m3fn || d == ST::Float8_e5m2) return false;
  const bool narrow_d = d == ST::Half || d == ST::BFloat16;
  if (narrow_d && (s == ST::Double || s == ST::Long || s == ST::Int)) return false;
  return true;
}

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
    keep_storage_for_capture(s, c.storage());    // and every replay of a graph that captured it
  } else {
    synchronize_stream(s);  // pageable memory: the bytes must be read before we return
  }
}

// Moves src's elements into dst's (same dtype, no shared memory) as
// integers of the element's size with copy_strided_<bits> (1.1), which
// every backend runs; 16-byte elements (complex128) as two 8-byte halves.
// False when the layout has more dimensions than the kernel takes.
bool move_elements(const Tensor& src, const Tensor& dst, const c10::Stream& s) {
  std::vector<int64_t> sizes = dst.sizes().vec(), sstr = src.strides().vec(), dstr = dst.strides().vec();
  size_t unit = dst.element_size();
  if (unit == 16) {
    unit = 8;
    for (auto& x : sstr) x *= 2;
    for (auto& x : dstr) x *= 2;
    sizes.push_back(2);
    sstr.push_back(1);
    dstr.push_back(1);
  }
  const char* bits = bits_type_name(unit);
  TORCH_CHECK(bits, "xdal: no copy for elements of ", dst.element_size(), " bytes (", dst.scalar_type(), ")");
  StridedMeta m{};
  if (!fill_meta(sizes, sstr, dstr, m)) return false;
  BuiltinLayout l = builtin_layout(m);
  void* a = ptr_of(src);
  void* b = ptr_of(dst);
  xdal_kernel_arg_t args[] = {{&a, 8},       {&b, 8}, {&l.ndim, 8}, {l.sizes, sizeof l.sizes}, {l.src_strides, sizeof l.src_strides},
                              {l.dst_strides, sizeof l.dst_strides}};
  launch(builtin("copy_strided", bits), s, dst.numel(), true, args, 6);
  return true;
}

// Converts src's elements into dst's (other dtypes, no shared memory): with
// cast_strided_trunc_<s>_<d> (1.1) where it converts as the CPU does, else
// with the host conversion kernel (c10::convert) where the backend runs host
// code, else on the CPU. False when the layout has more dimensions than the
// kernels take.
bool convert_elements(const Tensor& src, const Tensor& dst, const c10::Stream& s) {
  const at::ScalarType st = src.scalar_type(), dt = dst.scalar_type();
  const bool builtin_ok = builtin_cast_ok(st, dt);
  const xdal_function_t host = copy_kernel();
  if (builtin_ok || (host && host_convert_supported(st) && host_convert_supported(dt))) {
    StridedMeta m{};
    if (!fill_meta(dst.sizes(), src.strides(), dst.strides(), m)) return false;
    void* a = ptr_of(src);
    void* b = ptr_of(dst);
    if (builtin_ok) {
      BuiltinLayout l = builtin_layout(m);
      xdal_kernel_arg_t args[] = {{&a, 8},       {&b, 8}, {&l.ndim, 8}, {l.sizes, sizeof l.sizes}, {l.src_strides, sizeof l.src_strides},
                                  {l.dst_strides, sizeof l.dst_strides}};
      launch(builtin("cast_strided_trunc", builtin_type_name(st), builtin_type_name(dt)), s, dst.numel(), true,
             args, 6);
    } else {
      m.src_type = int32_t(st);
      m.dst_type = int32_t(dt);
      m.numel = dst.numel();
      xdal_kernel_arg_t args[] = {{&a, 8}, {&b, 8}, {&m, sizeof m}};
      launch(host, s, dst.numel(), false, args, 3);
    }
    return true;
  }
  // Pairs the built-ins convert otherwise than the CPU, on a backend that
  // runs no host code, and element types xdal lacks (complex to real, the
  // unsigned 16-64 bit types, ...): the CPU converts.
  raw_from_cpu(raw_to_cpu(src).to(dt), dst, false);
  return true;
}

}  // namespace

void copy_same_device(const Tensor& src, const Tensor& dst, const c10::Stream& s) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (src.scalar_type() == dst.scalar_type() && dense_same_layout(src, dst)) {
    // xdal's copies are memmove: src may overlap dst.
    memcpy_on(ptr_of(dst), ptr_of(src), size_t(n) * dst.element_size(), XDAL_MEMCPY_DEVICE_TO_DEVICE, s);
    return;
  }
  if (ranges_overlap(src, dst)) {
    // The strided kernels refuse a source that shares memory with its
    // destination: through a copy of the source.
    Tensor tmp = at::empty(src.sizes(), src.options().memory_format(at::MemoryFormat::Contiguous));
    copy_same_device(src, tmp, s);
    copy_same_device(tmp, dst, s);
    return;
  }
  const bool done =
      src.scalar_type() == dst.scalar_type() ? move_elements(src, dst, s) : convert_elements(src, dst, s);
  if (done) return;
  // More dimensions than the strided kernels take, none of them mergeable:
  // one slice of the first dimension at a time.
  for (int64_t i = 0; i < dst.size(0); ++i) copy_same_device(src.select(0, i), dst.select(0, i), s);
}

namespace {

// src on device a, dst on device b: the copy runs on b's current stream,
// ordered after a's current stream, which in turn waits for the copy (so
// that src's memory is not reused before the copy has read it).
void copy_cross_device(const Tensor& src, const Tensor& dst) {
  const c10::DeviceIndex a = src.device().index(), b = dst.device().index();
  Tensor s = src;
  if (s.scalar_type() != dst.scalar_type() || !s.is_non_overlapping_and_dense()) {
    DeviceSwitch on(src.device().index());
    Tensor tmp = at::empty(s.sizes(), s.options().dtype(dst.scalar_type()).memory_format(at::MemoryFormat::Contiguous));
    copy_same_device(s, tmp, current_stream(a));
    s = tmp;
  }
  DeviceSwitch on(dst.device().index());
  Tensor d = dense_same_layout(s, dst) ? dst : at::empty_strided(s.sizes(), s.strides(), dst.options());
  const c10::Stream sa = current_stream(a), sb = current_stream(b);
  stream_wait_stream(sb, sa);
  memcpy_on(ptr_of(d), ptr_of(s), size_t(s.numel()) * s.element_size(), XDAL_MEMCPY_DEVICE_TO_DEVICE, sb);
  stream_wait_stream(sa, sb);
  if (!d.is_same(dst)) copy_same_device(d, dst, sb);
}

}  // namespace

namespace ops {

Tensor copy_from(const Tensor& self, const Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "xdal: copy of an undefined tensor");
  if (self.is_same(dst)) return dst;
  OperatorScope named("aten::_copy_from", "a copy between host and device memory waits for the device");
  // copy_ reaches _copy_from before TensorIterator's checks: they are made
  // here, so that no copy xdal would refuse (or race on) is queued.
  check_write_overlap(dst, {self});
  if (dst.numel() == 0) return dst;
  Tensor src = self.sizes().equals(dst.sizes()) ? self : self.expand(dst.sizes());

  if (src.is_conj() != dst.is_conj() || src.is_neg() != dst.is_neg()) {
    // Materialize the values on the CPU, where copy_ resolves the bits.
    Tensor v;
    if (is_xdal(src)) {
      DeviceSwitch on(src.device().index());
      v = raw_to_cpu(src);
      v._set_conj(src.is_conj());
      v._set_neg(src.is_neg());
    } else {
      v = src;
    }
    if (!is_xdal(dst)) {
      dst.copy_(v);
    } else {
      DeviceSwitch on(dst.device().index());
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
      DeviceSwitch on(dst.device().index());
      copy_same_device(src, dst, current_stream(dst.device().index()));
    } else {
      copy_cross_device(src, dst);
    }
  } else if (src.is_cpu() && is_xdal(dst)) {
    DeviceSwitch on(dst.device().index());
    Tensor c = src.scalar_type() == dst.scalar_type() ? src : src.to(dst.scalar_type());
    raw_from_cpu(c, dst, non_blocking);
    note_range_of_copy(c, dst);
  } else if (is_xdal(src) && dst.is_cpu()) {
    DeviceSwitch on(src.device().index());
    if (src.scalar_type() == dst.scalar_type() && dense_same_layout(src, dst)) {
      const c10::Stream s = current_stream(src.device().index());
      memcpy_on(ptr_of(dst), ptr_of(src), size_t(src.numel()) * src.element_size(), XDAL_MEMCPY_DEVICE_TO_HOST, s);
      if (non_blocking && is_pinned_ptr(dst.const_data_ptr())) {
        host_record_stream(dst.const_data_ptr(), s);
        keep_storage_for_capture(s, dst.storage());
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

// The CPU fallback's way back for out= arguments. An out of the wrong
// shape takes the layout the CPU's kernel gave its own (column-major from
// linalg, channels_last from a convolution), as that kernel would have
// given it; one of the right shape keeps its strides.
Tensor copy_from_and_resize(const Tensor& self, const Tensor& dst) {
  if (!dst.sizes().equals(self.sizes())) {
    dst.resize_(self.sizes());
    if (self.is_non_overlapping_and_dense() && !dst.strides().equals(self.strides())) {
      dst.as_strided_(self.sizes(), self.strides());
    }
  }
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const Tensor& self) {
  OperatorScope named("aten::_local_scalar_dense (Tensor.item())", "it reads the value on the host");
  DeviceSwitch on(self.device().index());
  Tensor v = raw_to_cpu(self);
  v._set_conj(self.is_conj());
  v._set_neg(self.is_neg());
  return at::_local_scalar_dense(v.resolve_conj().resolve_neg());
}

}  // namespace ops
}  // namespace torch_xdal
