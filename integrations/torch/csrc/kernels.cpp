// The host conversion kernel for the fake backend (and any backend that
// runs host code), launched through xdal_launch_kernel. They touch memory only through their
// pointer arguments, which xdal hands them as usable addresses (in
// XDAL_FAKE_PROTECT=1 mode too). Also: the cache of built-in kernels, the
// element types they take, the layout arguments of strided kernels and the
// launch helper. No ATen header here (only ATen's forward declarations):
// this unit compiles quickly.
#include "xdal_torch.h"

#include <c10/util/TypeCast.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_xdal {
namespace {

using c10::ScalarType;

// One contiguous chunk of [0, n) per block.
void block_range(const xdal_kernel_context_t* ctx, int64_t n, int64_t* begin, int64_t* end) {
  const uint64_t blocks = uint64_t(ctx->grid_dim.x) * ctx->grid_dim.y * ctx->grid_dim.z;
  const uint64_t id =
      (uint64_t(ctx->block_idx.z) * ctx->grid_dim.y + ctx->block_idx.y) * ctx->grid_dim.x +
      ctx->block_idx.x;
  const int64_t per = int64_t((uint64_t(n) + blocks - 1) / blocks);
  *begin = std::min<int64_t>(n, int64_t(id) * per);
  *end = std::min<int64_t>(n, *begin + per);
}

// Walks the elements [begin, end) of a strided index space, calling
// f(src_offset, dst_offset) in elements.
template <typename F>
void walk(int ndim, const int64_t* sizes, const int64_t* sstr, const int64_t* dstr, int64_t begin,
          int64_t end, F&& f) {
  if (begin >= end) return;
  int64_t idx[XDAL_STRIDED_MAX_DIMS] = {0};
  int64_t rem = begin;
  int64_t so = 0, doff = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? rem % sizes[d] : 0;
    rem = sizes[d] ? rem / sizes[d] : 0;
    so += idx[d] * sstr[d];
    doff += idx[d] * dstr[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(so, doff);
    for (int d = ndim - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) {
        so += sstr[d];
        doff += dstr[d];
        break;
      }
      so -= (sizes[d] - 1) * sstr[d];
      doff -= (sizes[d] - 1) * dstr[d];
      idx[d] = 0;
    }
  }
}

template <typename S, typename D>
void convert_range(const char* src, char* dst, const StridedMeta& m, int64_t b, int64_t e) {
  const S* s = reinterpret_cast<const S*>(src);
  D* d = reinterpret_cast<D*>(dst);
  if (m.ndim == 1 && m.src_strides[0] == 1 && m.dst_strides[0] == 1) {
    for (int64_t i = b; i < e; ++i) d[i] = c10::convert<D>(s[i]);
    return;
  }
  walk(m.ndim, m.sizes, m.src_strides, m.dst_strides, b, e,
       [&](int64_t so, int64_t dof) { d[dof] = c10::convert<D>(s[so]); });
}

#define TX_CONVERT_TYPES(_)    \
  _(double, Double)            \
  _(float, Float)              \
  _(c10::Half, Half)           \
  _(c10::BFloat16, BFloat16)   \
  _(int64_t, Long)             \
  _(int32_t, Int)              \
  _(int16_t, Short)            \
  _(int8_t, Char)              \
  _(uint8_t, Byte)             \
  _(bool, Bool)                \
  _(c10::Float8_e4m3fn, Float8_e4m3fn) \
  _(c10::Float8_e5m2, Float8_e5m2)

using RangeFn = void (*)(const char*, char*, const StridedMeta&, int64_t, int64_t);

template <typename S>
RangeFn pick_dst(ScalarType d) {
  switch (d) {
#define TX_CASE(T, name) \
  case ScalarType::name: \
    return &convert_range<S, T>;
    TX_CONVERT_TYPES(TX_CASE)
#undef TX_CASE
    default:
      return nullptr;
  }
}

RangeFn pick(ScalarType s, ScalarType d) {
  switch (s) {
#define TX_CASE(T, name) \
  case ScalarType::name: \
    return pick_dst<T>(d);
    TX_CONVERT_TYPES(TX_CASE)
#undef TX_CASE
    default:
      return nullptr;
  }
}

xdal_status_t copy_kernel_fn(const xdal_kernel_context_t* ctx, void* const* args) {
  const char* src = *static_cast<const char* const*>(args[0]);
  char* dst = *static_cast<char* const*>(args[1]);
  const StridedMeta& m = *static_cast<const StridedMeta*>(args[2]);
  int64_t b = 0, e = 0;
  block_range(ctx, m.numel, &b, &e);
  if (b >= e) return XDAL_SUCCESS;
  RangeFn fn = pick(ScalarType(m.src_type), ScalarType(m.dst_type));
  if (!fn) return XDAL_ERROR_INVALID_VALUE;
  fn(src, dst, m, b, e);
  return XDAL_SUCCESS;
}

std::atomic<int64_t> host_launches{0};

}  // namespace

xdal_function_t function_from_host(xdal_host_kernel_t fn) {
  xdal_function_t f = nullptr;
  const xdal_status_t status = xdal_function_from_host(&f, fn);
  if (status == XDAL_ERROR_NOT_SUPPORTED) return nullptr;
  TX_CHECK(status);
  return f;
}

int64_t host_kernel_launches() { return host_launches.load(std::memory_order_relaxed); }

bool host_convert_supported(ScalarType type) {
  switch (type) {
#define TX_CASE(T, name) case ScalarType::name:
    TX_CONVERT_TYPES(TX_CASE)
#undef TX_CASE
    return true;
    default:
      return false;
  }
}

xdal_function_t copy_kernel() {
  static xdal_function_t f = function_from_host(&copy_kernel_fn);
  return f;
}

bool runs_host_kernels() { return copy_kernel() != nullptr; }

const char* bits_type_name(size_t itemsize) {
  switch (itemsize) {
    case 1: return "u8";
    case 2: return "i16";
    case 4: return "i32";
    case 8: return "i64";
    default: return nullptr;
  }
}

const char* builtin_type_name(ScalarType type) {
  switch (type) {
    case ScalarType::Double: return "f64";
    case ScalarType::Float: return "f32";
    case ScalarType::Half: return "f16";
    case ScalarType::BFloat16: return "bf16";
    case ScalarType::Float8_e4m3fn: return "f8e4m3";
    case ScalarType::Float8_e5m2: return "f8e5m2";
    case ScalarType::Long: return "i64";
    case ScalarType::Int: return "i32";
    case ScalarType::Short: return "i16";
    case ScalarType::Char: return "i8";
    case ScalarType::Byte: return "u8";
    case ScalarType::Bool: return "bool";
    default: return nullptr;
  }
}

bool native_arith_type(ScalarType t) {
  switch (t) {
    case ScalarType::Double: case ScalarType::Float: case ScalarType::Half: case ScalarType::BFloat16:
    case ScalarType::Long: case ScalarType::Int: case ScalarType::Short: case ScalarType::Char:
    case ScalarType::Byte: case ScalarType::Bool:
      return true;
    default:
      return false;
  }
}

xdal_function_t builtin(const char* name) {
  static std::mutex mutex;
  static xdal_module_t module = nullptr;
  static std::unordered_map<std::string, xdal_function_t> cache;
  std::lock_guard<std::mutex> guard(mutex);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  if (!module) TX_CHECK(xdal_module_get_builtin(&module));
  xdal_function_t f = nullptr;
  TX_CHECK(xdal_module_get_function(&f, module, name));
  cache.emplace(name, f);
  return f;
}

xdal_function_t builtin(const char* family, const char* type, const char* type2) {
  struct Entry {
    const char *family = nullptr, *type = nullptr, *type2 = nullptr;
    xdal_function_t function = nullptr;
  };
  thread_local std::array<Entry, 16> recent{};
  thread_local size_t next = 0;
  for (const Entry& e : recent)
    if (e.function && e.family == family && e.type == type && e.type2 == type2) return e.function;
  std::string name = std::string(family) + "_" + type;
  if (type2) name += std::string("_") + type2;
  const xdal_function_t f = builtin(name.c_str());
  recent[next] = {family, type, type2, f};
  next = (next + 1) % recent.size();
  return f;
}

bool fill_meta(c10::IntArrayRef sizes, c10::IntArrayRef sstr, c10::IntArrayRef dstr, StridedMeta& m) {
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
  if (sz.size() > size_t(XDAL_STRIDED_MAX_DIMS)) return false;
  m.ndim = int32_t(sz.size());
  for (size_t i = 0; i < sz.size(); ++i) {
    m.sizes[i] = sz[i];
    m.src_strides[i] = ss[i];
    m.dst_strides[i] = ds[i];
  }
  return true;
}

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

void launch(xdal_function_t fn, const c10::Stream& stream, int64_t n, bool builtin_kernel,
            const xdal_kernel_arg_t* args, size_t num_args) {
  xdal_dim3_t grid{1, 1, 1};
  xdal_dim3_t block{1, 1, 1};
  if (builtin_kernel) {
    // Built-ins are grid-stride loops: 16 elements a thread at least. A
    // block costs a call (and on a GPU a scheduling slot), so a small
    // tensor is one block, and a launch of 1e3 elements does not hand
    // three blocks to other workers for 256 elements each.
    grid.x = uint32_t(std::clamp<int64_t>((n + 4095) / 4096, 1, 1024));
    block.x = 256;
  } else {
    grid.x = uint32_t(std::clamp<int64_t>((n + 32767) / 32768, 1, 64));
    host_launches.fetch_add(1, std::memory_order_relaxed);
  }
  TX_CHECK(xdal_launch_kernel(fn, grid, block, 0, native_stream(stream), args, num_args));
}

}  // namespace torch_xdal
