// The pinned host allocator: an at::HostAllocator on xdal_malloc_host,
// behind pin_memory() and non_blocking copies. A block used by an async
// copy goes back to xdal only once the copy's stream has passed it.
#include "xdal_torch.h"

#include <ATen/core/CachingHostAllocator.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace torch_xdal {
namespace {

void delete_host_memory(void* ptr);

// Pinned memory from xdal_malloc_host. A block used by an async copy is
// released only after the copy's stream has passed it: the deleter records
// an event on each such stream and parks the block until they complete.
class XdalHostAllocator final : public at::HostAllocator {
 public:
  at::DataPtr allocate(size_t n) override {
    process_deferred(false);
    void* ptr = nullptr;
    if (n > 0) {
      TX_CHECK(xdal_malloc_host(&ptr, n));
      std::lock_guard<std::mutex> g(mutex_);
      blocks_.emplace(ptr, HostBlock{n, {}});
      stats_.active_requests.increase(1);
      stats_.active_bytes.increase(n);
      stats_.allocations.increase(1);
      stats_.allocated_bytes.increase(n);
      stats_.num_host_alloc++;
    }
    return {ptr, ptr, &delete_host_memory, c10::Device(c10::kCPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_host_memory; }

  void copy_data(void* dst, const void* src, std::size_t count) const override {
    if (count) std::memcpy(dst, src, count);
  }

  void free(void* ptr) noexcept {
    if (!ptr) return;
    std::vector<c10::Stream> used;
    size_t size = 0;
    {
      std::lock_guard<std::mutex> g(mutex_);
      auto it = blocks_.find(ptr);
      if (it == blocks_.end()) return;
      used = std::move(it->second.used_on);
      size = it->second.size;
      blocks_.erase(it);
      stats_.active_requests.decrease(1);
      stats_.active_bytes.decrease(size);
    }
    std::vector<xdal_event_t> events;
    for (const auto& s : used) {
      try {
        DeviceSwitch on(s.device_index());
        xdal_event_t ev = nullptr;
        TX_CHECK(xdal_event_create(&ev, XDAL_EVENT_DISABLE_TIMING));
        TX_CHECK(xdal_event_record(ev, native_stream(s)));
        events.push_back(ev);
      } catch (const std::exception& e) {
        TORCH_WARN("xdal: pinned block free: ", e.what());
      }
    }
    if (events.empty()) {
      release(ptr, size);
    } else {
      std::lock_guard<std::mutex> g(mutex_);
      deferred_.push_back(Deferred{ptr, size, std::move(events)});
    }
    process_deferred(false);
  }

  bool record_event(void* ptr, void* /*ctx*/, c10::Stream stream) override {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) return false;
    for (const auto& s : it->second.used_on)
      if (s == stream) return true;
    it->second.used_on.push_back(stream);
    return true;
  }

  void record_use(const void* ptr, const c10::Stream& stream) {
    std::lock_guard<std::mutex> g(mutex_);
    // The tensor's data pointer may lie inside the block: find the block.
    auto it = blocks_.upper_bound_find(ptr);
    if (it == blocks_.end()) return;
    for (const auto& s : it->second.used_on)
      if (s == stream) return;
    it->second.used_on.push_back(stream);
  }

  bool contains(const void* ptr) {
    std::lock_guard<std::mutex> g(mutex_);
    return blocks_.upper_bound_find(ptr) != blocks_.end();
  }

  void empty_cache() override { process_deferred(true); }

  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> g(mutex_);
    return stats_;
  }
  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> g(mutex_);
    stats_.active_requests.reset_accumulated();
    stats_.active_bytes.reset_accumulated();
    stats_.allocations.reset_accumulated();
    stats_.allocated_bytes.reset_accumulated();
    stats_.num_host_alloc = 0;
    stats_.num_host_free = 0;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> g(mutex_);
    stats_.active_requests.reset_peak();
    stats_.active_bytes.reset_peak();
    stats_.allocations.reset_peak();
    stats_.allocated_bytes.reset_peak();
  }

 private:
  struct HostBlock {
    size_t size;
    std::vector<c10::Stream> used_on;
  };
  struct Deferred {
    void* ptr;
    size_t size;
    std::vector<xdal_event_t> events;
  };
  // An ordered map so that interior pointers find their block.
  struct BlockMap : std::map<const void*, HostBlock> {
    iterator upper_bound_find(const void* p) {
      auto it = upper_bound(p);
      if (it == begin()) return end();
      --it;
      auto base = static_cast<const char*>(it->first);
      return static_cast<const char*>(p) < base + it->second.size ? it : end();
    }
  };

  void release(void* ptr, size_t size) noexcept {
    xdal_free_host(ptr);
    std::lock_guard<std::mutex> g(mutex_);
    stats_.allocations.decrease(1);
    stats_.allocated_bytes.decrease(size);
    stats_.num_host_free++;
  }

  void process_deferred(bool wait) noexcept {
    std::vector<Deferred> ready;
    {
      std::lock_guard<std::mutex> g(mutex_);
      for (auto it = deferred_.begin(); it != deferred_.end();) {
        bool done = true;
        for (auto ev : it->events) {
          xdal_status_t s = wait ? xdal_event_synchronize(ev) : xdal_event_query(ev);
          if (s == XDAL_ERROR_NOT_READY) {
            done = false;
            break;
          }
        }
        if (done) {
          ready.push_back(std::move(*it));
          it = deferred_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& d : ready) {
      for (auto ev : d.events) xdal_event_destroy(ev);
      release(d.ptr, d.size);
    }
  }

  std::mutex mutex_;
  BlockMap blocks_;
  std::vector<Deferred> deferred_;
  at::HostStats stats_;
};

XdalHostAllocator& the_host_allocator() {
  static auto* a = new XdalHostAllocator();
  return *a;
}

void delete_host_memory(void* ptr) { the_host_allocator().free(ptr); }

const bool allocator_registered [[maybe_unused]] = [] {
  at::setHostAllocator(kXdal, &the_host_allocator());
  return true;
}();

}  // namespace

c10::Allocator* host_allocator() { return &the_host_allocator(); }

bool is_pinned_ptr(const void* ptr) {
  if (!ptr) return false;
  xdal_pointer_attributes_t attrs{};
  attrs.struct_size = sizeof attrs;
  if (xdal_pointer_get_attributes(ptr, &attrs) != XDAL_SUCCESS) return false;
  return attrs.type == XDAL_MEMORY_TYPE_HOST;
}

void host_record_stream(const void* ptr, const c10::Stream& stream) {
  the_host_allocator().record_use(ptr, stream);
}

}  // namespace torch_xdal
