// What torch_xdal knows of the values of integer tensors on the device:
// their least and greatest element, read on the host when a small one was
// copied from there, or known from the kernel that writes them (max
// pooling's indices). Class targets and embedding ids are such copies
// (`y.to("xdal")`), and the operators that index with them may check them
// against their bound on the calling thread, where the CPU raises an
// index out of range, without waiting for the stream (host_fallback.cpp).
//
// The range holds while the tensor's version counter is where it was at
// the copy: every write through an operator bumps it (in-place, out=,
// views sharing the counter). A write that bypasses it (through `.data`,
// a tensor built over the same storage, a graph replay, raw pointers)
// leaves a stale range; the CPU kernel then still checks every target as
// it runs, and a bad one fails the stream's next synchronization with the
// kernel's message, as a GPU's device-side assert does: later, never a
// wrong value.

#include "xdal_torch.h"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <array>
#include <mutex>
#include <optional>

namespace torch_xdal {
namespace {

// Targets and other index tensors are small; the range of a larger copy
// would cost a pass over it that nothing may use.
constexpr int64_t kMaxElements = int64_t{1} << 16;

struct KnownRange {
  // Weak: the range must not keep the memory alive, and while it is held
  // no other storage can take its StorageImpl's address.
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  const char* begin;  // the copied bytes
  const char* end;
  at::ScalarType dtype;
  uint32_t version;
  int64_t least, greatest;
};

std::mutex ranges_mutex;
std::array<std::optional<KnownRange>, 32> ranges;  // the latest copies, oldest overwritten
size_t next_slot = 0;

bool tracked_dtype(at::ScalarType t) {
  return t == at::kByte || t == at::kChar || t == at::kShort || t == at::kInt || t == at::kLong;
}

// The bytes `t`'s elements span, from its lowest to past its highest.
std::pair<const char*, const char*> span_of(const at::Tensor& t) {
  const char* base = static_cast<const char*>(t.const_data_ptr());
  int64_t low = 0, high = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t reach = (t.size(d) - 1) * t.stride(d);
    (reach < 0 ? low : high) += reach;
  }
  return {base + low * static_cast<int64_t>(t.element_size()),
          base + (high + 1) * static_cast<int64_t>(t.element_size())};
}

}  // namespace

void note_range(const at::Tensor& t, int64_t least, int64_t greatest) {
  if (!tracked_dtype(t.scalar_type()) || t.numel() == 0 || t.is_inference() || !t.has_storage()) return;
  const auto [begin, end] = span_of(t);
  KnownRange range{t.storage().getWeakStorageImpl(),
                   begin,
                   end,
                   t.scalar_type(),
                   t.unsafeGetTensorImpl()->version_counter().current_version(),
                   least,
                   greatest};
  std::lock_guard<std::mutex> g(ranges_mutex);
  for (auto& r : ranges) {
    if (r && r->storage._unsafe_get_target() == t.storage().unsafeGetStorageImpl()) {
      r = std::move(range);  // the storage's new contents
      return;
    }
  }
  ranges[next_slot] = std::move(range);
  next_slot = (next_slot + 1) % ranges.size();
}

void note_range_of_copy(const at::Tensor& cpu, const at::Tensor& dst) {
  if (!tracked_dtype(dst.scalar_type()) || cpu.scalar_type() != dst.scalar_type() || dst.numel() == 0 ||
      dst.numel() > kMaxElements)
    return;
  const auto [least, greatest] = at::aminmax(cpu);
  note_range(dst, least.item<int64_t>(), greatest.item<int64_t>());
}

bool known_within(const at::Tensor& t, int64_t low, int64_t high) {
  if (!tracked_dtype(t.scalar_type()) || t.is_inference() || !t.has_storage()) return false;
  if (t.numel() == 0) return true;
  const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  const uint32_t version = t.unsafeGetTensorImpl()->version_counter().current_version();
  const auto [begin, end] = span_of(t);
  std::lock_guard<std::mutex> g(ranges_mutex);
  for (const auto& r : ranges) {
    if (!r || r->storage._unsafe_get_target() != storage || r->storage.expired()) continue;
    return r->dtype == t.scalar_type() && r->version == version && begin >= r->begin && end <= r->end &&
           r->least >= low && r->greatest < high;
  }
  return false;
}

}  // namespace torch_xdal
