// What torch_xdal knows of the values of integer tensors on the device:
// their least and greatest element, read on the host when a small one was
// copied from there, or known from the kernel that writes them (max
// pooling's indices). Class targets and embedding ids are such copies
// (`y.to("xdal")`), and the operators that index with them may check them
// against their bound on the calling thread, where the CPU raises an
// index out of range, without waiting for the stream (host_fallback.cpp).
//
// The range holds while the tensor's version counter is where it was when
// noted: every write through an operator bumps it (in-place, out=, views
// sharing the counter). A write that bypasses it (through `.data`, a
// tensor built over the same storage, raw pointers) leaves a stale range;
// the CPU kernel then still checks every index as it runs, and a bad one
// fails the stream's next synchronization with the kernel's message, as a
// GPU's device-side assert does: later, never a wrong value.

#include "xdal_torch.h"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
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
  const char* begin;  // the bytes the tensor spans
  const char* end;
  at::ScalarType dtype;
  uint32_t version;
  int64_t least, greatest;
  uint64_t last_used;  // a value of `ticks` (noted or asked for)
};

// 32 ranges: a new one takes the slot of the same storage, else of a
// storage gone (max pooling notes new indices at every step, freed at the
// next), else the one least recently noted or asked for, so that a
// training loop's targets, copied once, stay known.
std::mutex ranges_mutex;
std::array<std::optional<KnownRange>, 32> ranges;
uint64_t ticks = 0;

bool tracked_dtype(at::ScalarType t) {
  return t == at::kByte || t == at::kChar || t == at::kShort || t == at::kInt || t == at::kLong;
}

// A tensor whose range can be noted: integer elements, some, in storage
// with a version counter.
bool notable(const at::Tensor& t) {
  return tracked_dtype(t.scalar_type()) && t.numel() > 0 && !t.is_inference() && t.has_storage();
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
  if (!notable(t)) return;
  const auto [begin, end] = span_of(t);
  KnownRange range{t.storage().getWeakStorageImpl(),
                   begin,
                   end,
                   t.scalar_type(),
                   t.unsafeGetTensorImpl()->version_counter().current_version(),
                   least,
                   greatest,
                   0};
  std::lock_guard<std::mutex> g(ranges_mutex);
  range.last_used = ++ticks;
  std::optional<KnownRange>* slot = nullptr;
  for (auto& r : ranges)
    if (r && r->storage._unsafe_get_target() == t.storage().unsafeGetStorageImpl()) slot = &r;  // new contents
  for (auto& r : ranges)
    if (!slot && (!r || r->storage.expired())) slot = &r;
  if (!slot)  // every slot holds a live range
    slot = &*std::min_element(ranges.begin(), ranges.end(),
                              [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
  *slot = std::move(range);
}

void note_range_of_copy(const at::Tensor& cpu, const at::Tensor& dst) {
  if (cpu.scalar_type() != dst.scalar_type() || dst.numel() > kMaxElements || !notable(dst)) return;
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
  for (auto& r : ranges) {
    if (!r || r->storage._unsafe_get_target() != storage || r->storage.expired()) continue;
    r->last_used = ++ticks;
    return r->dtype == t.scalar_type() && r->version == version && begin >= r->begin && end <= r->end &&
           r->least >= low && r->greatest < high;
  }
  return false;
}

}  // namespace torch_xdal
