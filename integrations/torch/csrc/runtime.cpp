// The runtime half of torch_xdal: devices, streams and events (the device
// guard), the device allocator on xdal's stream-ordered pool, the pinned host
// allocator, the PrivateUse1 hooks and the per-device random generators. Every
// piece is a thin mapping onto xdal calls.
#include "xdal_torch.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceCapability.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <array>
#include <cstring>
#include <map>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torch_xdal {

// ---------------------------------------------------------------- errors

std::string last_error_message() {
  char buf[1024];
  size_t needed = 0;
  if (xdal_get_last_error_message(buf, sizeof buf, &needed) != XDAL_SUCCESS) return "";
  return buf;
}

void raise(xdal_status_t status, const char* call) {
  std::string msg = std::string("xdal: ") + call + " failed: " + xdal_status_string(status) +
                    " (" + last_error_message() + ")";
  if (status == XDAL_ERROR_OUT_OF_MEMORY) {
    C10_THROW_ERROR(OutOfMemoryError, msg);
  }
  C10_THROW_ERROR(Error, msg);
}

// ---------------------------------------------------------------- devices

c10::DeviceIndex device_count() noexcept {
  static const c10::DeviceIndex count = [] {
    int n = 0;
    if (xdal_device_get_count(&n) != XDAL_SUCCESS) return c10::DeviceIndex(0);
    return c10::DeviceIndex(std::min(n, 64));
  }();
  return count;
}

void check_device(c10::DeviceIndex device) {
  TORCH_CHECK(device >= 0 && device < device_count(), "xdal: device index ", int(device),
              " is out of range [0, ", int(device_count()), ")");
}

c10::DeviceIndex current_device() {
  int d = 0;
  TX_CHECK(xdal_device_get(&d));
  return c10::DeviceIndex(d);
}

void set_device(c10::DeviceIndex device) {
  check_device(device);
  TX_CHECK(xdal_device_set(device));
}

c10::DeviceIndex exchange_device(c10::DeviceIndex device) {
  c10::DeviceIndex previous = current_device();
  if (device != previous) set_device(device);
  return previous;
}

DeviceSwitch::DeviceSwitch(c10::DeviceIndex device) {
  int current = 0;
  TX_CHECK(xdal_device_get(&current));
  if (device >= 0 && device != current) {
    TX_CHECK(xdal_device_set(device));
    previous_ = current;
  }
}

DeviceSwitch::~DeviceSwitch() {
  if (previous_ >= 0) xdal_device_set(previous_);
}

// ---------------------------------------------------------------- streams

namespace {

constexpr int kPoolSize = 32;
constexpr int kMaxLevels = 4;

struct DevicePools {
  std::once_flag once;
  int levels = 1;
  int least = 0;
  std::array<std::array<xdal_stream_t, kPoolSize>, kMaxLevels> streams{};
  std::array<std::atomic<uint32_t>, kMaxLevels> counters{};
};

std::vector<std::unique_ptr<DevicePools>>& all_pools() {
  static std::vector<std::unique_ptr<DevicePools>> pools = [] {
    std::vector<std::unique_ptr<DevicePools>> v;
    for (int i = 0; i < device_count(); ++i) v.push_back(std::make_unique<DevicePools>());
    return v;
  }();
  return pools;
}

DevicePools& pools_of(c10::DeviceIndex device) {
  check_device(device);
  DevicePools& p = *all_pools()[size_t(device)];
  std::call_once(p.once, [&] {
    DeviceSwitch on(device);
    int least = 0, greatest = 0;
    TX_CHECK(xdal_device_get_stream_priority_range(&least, &greatest));
    p.least = least;
    p.levels = std::clamp(least - greatest + 1, 1, kMaxLevels);
    for (int level = 0; level < p.levels; ++level) {
      for (int i = 0; i < kPoolSize; ++i) {
        TX_CHECK(xdal_stream_create(&p.streams[size_t(level)][size_t(i)], XDAL_STREAM_NON_BLOCKING,
                                    least - level));
      }
    }
  });
  return p;
}

c10::StreamId make_id(int level, int index) {
  return (c10::StreamId(index) << 4) | (c10::StreamId(level) << 1) | 1;
}

thread_local std::vector<c10::StreamId> tls_current;

c10::StreamId& current_id(c10::DeviceIndex device) {
  check_device(device);
  if (tls_current.empty()) tls_current.assign(size_t(device_count()), 0);
  return tls_current[size_t(device)];
}

c10::DeviceIndex resolve(c10::DeviceIndex device) {
  return device < 0 ? current_device() : device;
}

}  // namespace

namespace {

// Each device's default stream as a handle of its own (xdal 1.1), valid
// from any thread whatever its current device.
xdal_stream_t default_stream_handle(c10::DeviceIndex device) {
  static const std::vector<xdal_stream_t> handles = [] {
    std::vector<xdal_stream_t> v(static_cast<size_t>(device_count()));
    for (size_t d = 0; d < v.size(); ++d) TX_CHECK(xdal_device_get_default_stream(int(d), &v[d]));
    return v;
  }();
  check_device(device);
  return handles[size_t(device)];
}

}  // namespace

xdal_stream_t native_stream(const c10::Stream& stream) {
  const c10::StreamId id = stream.id();
  if (id == 0) return default_stream_handle(stream.device_index());
  TORCH_CHECK(id & 1, "xdal: unknown stream id ", id);
  DevicePools& p = pools_of(stream.device_index());
  const int level = int((id >> 1) & 7);
  const int index = int(id >> 4);
  TORCH_CHECK(level < p.levels && index < kPoolSize, "xdal: unknown stream id ", id);
  return p.streams[size_t(level)][size_t(index)];
}

c10::Stream current_stream(c10::DeviceIndex device) {
  device = resolve(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kXdal, device), current_id(device));
}

c10::Stream default_stream(c10::DeviceIndex device) {
  device = resolve(device);
  check_device(device);
  return c10::Stream(c10::Stream::DEFAULT, c10::Device(kXdal, device));
}

c10::Stream stream_from_pool(c10::DeviceIndex device, int priority) {
  device = resolve(device);
  DevicePools& p = pools_of(device);
  const int level = std::clamp(-priority, 0, p.levels - 1);
  const int index = int(p.counters[size_t(level)]++ % kPoolSize);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kXdal, device), make_id(level, index));
}

void set_current_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == kXdal, "xdal: not an xdal stream: ", stream);
  if (stream.id() != 0) native_stream(stream);  // validates the id
  current_id(stream.device_index()) = stream.id();
}

void synchronize_stream(const c10::Stream& stream) {
  TX_CHECK(xdal_stream_synchronize(native_stream(stream)));
}

bool query_stream(const c10::Stream& stream) {
  xdal_status_t s = xdal_stream_query(native_stream(stream));
  if (s == XDAL_ERROR_NOT_READY) return false;
  TX_CHECK(s);
  return true;
}

void stream_wait_stream(const c10::Stream& waiter, const c10::Stream& target) {
  if (waiter == target) return;
  xdal_event_t event = nullptr;
  {
    DeviceSwitch on(target.device_index());
    TX_CHECK(xdal_event_create(&event, XDAL_EVENT_DISABLE_TIMING));
    TX_CHECK(xdal_event_record(event, native_stream(target)));
  }
  const xdal_status_t s = xdal_stream_wait_event(native_stream(waiter), event);
  xdal_event_destroy(event);  // the wait keeps the recorded point
  TX_CHECK(s);
}

// ---------------------------------------------------------------- device guard

namespace {

struct XdalGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kXdal; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kXdal, "xdal: expected an xdal device, got ", d);
    return c10::Device(kXdal, exchange_device(d.index()));
  }
  c10::Device getDevice() const override { return c10::Device(kXdal, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kXdal, "xdal: expected an xdal device, got ", d);
    set_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override { xdal_device_set(d.index()); }

  c10::Stream getStream(c10::Device d) const override { return current_stream(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override { return default_stream(d.index()); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
    return stream_from_pool(d.index(), high_priority ? -kMaxLevels : 0);
  }
  c10::Stream getNewStream(c10::Device d, int priority) const override {
    return stream_from_pool(d.index(), priority);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream previous = current_stream(s.device_index());
    set_current_stream(s);
    return previous;
  }
  void* getStreamNativeHandle(const c10::Stream s) const override {
    return static_cast<void*>(native_stream(s));
  }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  c10::DeviceCapability getDeviceCapability(c10::Device /*d*/) const override {
    return c10::DeviceCapability();
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "xdal: event of device ",
                int(device_index), " recorded on a stream of device ", int(stream.device_index()));
    DeviceSwitch on(stream.device_index());
    auto ev = static_cast<xdal_event_t>(*event);
    if (!ev) {
      uint32_t flags = XDAL_EVENT_DISABLE_TIMING;
      switch (flag) {
        case c10::EventFlag::PYTORCH_DEFAULT: flags = XDAL_EVENT_DISABLE_TIMING; break;
        case c10::EventFlag::BACKEND_DEFAULT: flags = XDAL_EVENT_DEFAULT; break;
        default: TORCH_CHECK(false, "xdal: unknown event flag");
      }
      TX_CHECK(xdal_event_create(&ev, flags));
      *event = ev;
    }
    TX_CHECK(xdal_event_record(ev, native_stream(stream)));
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    TX_CHECK(xdal_stream_wait_event(native_stream(stream), static_cast<xdal_event_t>(event)));
  }
  bool queryEvent(void* event) const override {
    if (!event) return true;
    xdal_status_t s = xdal_event_query(static_cast<xdal_event_t>(event));
    if (s == XDAL_ERROR_NOT_READY) return false;
    TX_CHECK(s);
    return true;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    if (event) xdal_event_destroy(static_cast<xdal_event_t>(event));
  }
  void synchronizeEvent(void* event) const override {
    if (event) TX_CHECK(xdal_event_synchronize(static_cast<xdal_event_t>(event)));
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start && end, "xdal: both events must be recorded before elapsed_time");
    auto a = static_cast<xdal_event_t>(start);
    auto b = static_cast<xdal_event_t>(end);
    // CUDA reports "not ready" here; waiting for both points is friendlier.
    TX_CHECK(xdal_event_synchronize(a));
    TX_CHECK(xdal_event_synchronize(b));
    float ms = 0;
    TX_CHECK(xdal_event_elapsed_time(&ms, a, b));
    return double(ms);
  }

  bool queryStream(const c10::Stream& stream) const override { return query_stream(stream); }
  void synchronizeStream(const c10::Stream& stream) const override { synchronize_stream(stream); }
  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    DeviceSwitch on(resolve(device_index));
    TX_CHECK(xdal_device_synchronize());
  }
  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
    record_stream(data, stream);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, XdalGuardImpl)

// ---------------------------------------------------------------- device allocator

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatType;
constexpr size_t kAgg = static_cast<size_t>(StatType::AGGREGATE);

void delete_device_memory(void* ptr);

class XdalDeviceAllocator final : public c10::DeviceAllocator {
 public:
  struct Block {
    c10::DeviceIndex device;
    size_t size;
    c10::Stream stream;  // allocated on, freed on
    std::vector<c10::Stream> used_on;  // recordStream
  };

  c10::DataPtr allocate(size_t n) override {
    const c10::DeviceIndex device = current_device();
    if (n == 0) return {nullptr, nullptr, &delete_device_memory, c10::Device(kXdal, device)};
    const c10::Stream stream = current_stream(device);
    void* ptr = nullptr;
    {
      // Allocates on the stream's device, whatever the current one.
      xdal_status_t s = xdal_malloc_async(&ptr, n, native_stream(stream));
      if (s == XDAL_ERROR_OUT_OF_MEMORY) {
        // As c10::cuda does: wait for pending frees, give the pool's cached
        // blocks back, and try once more.
        {
          DeviceSwitch on(device);
          TX_CHECK(xdal_device_synchronize());
        }
        TX_CHECK(xdal_mem_empty_cache(device));
        s = xdal_malloc_async(&ptr, n, native_stream(stream));
      }
      if (s == XDAL_ERROR_OUT_OF_MEMORY) {
        std::lock_guard<std::mutex> g(mutex_);
        counters_[size_t(device)].num_ooms++;
      }
      TX_CHECK(s);
    }
    {
      std::lock_guard<std::mutex> g(mutex_);
      blocks_.emplace(ptr, Block{device, n, stream, {}});
      auto& c = counters_[size_t(device)];
      c.allocation.increase(1);
      c.bytes.increase(n);
    }
    return {ptr, ptr, &delete_device_memory, c10::Device(kXdal, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_device_memory; }

  void copy_data(void* dst, const void* src, std::size_t count) const override {
    if (count == 0) return;
    const c10::Stream stream = current_stream(-1);
    TX_CHECK(xdal_memcpy_async(dst, src, count, XDAL_MEMCPY_DEFAULT, native_stream(stream)));
  }

  void free(void* ptr) noexcept {
    if (!ptr) return;
    Block block{0, 0, c10::Stream(c10::Stream::DEFAULT, c10::Device(kXdal, 0)), {}};
    {
      std::lock_guard<std::mutex> g(mutex_);
      auto it = blocks_.find(ptr);
      if (it == blocks_.end()) return;
      block = std::move(it->second);
      blocks_.erase(it);
      auto& c = counters_[size_t(block.device)];
      c.allocation.decrease(1);
      c.bytes.decrease(block.size);
    }
    try {
      // recordStream: the block is reused only after every stream it was
      // used on has reached this point, as c10::cuda's cudaMallocAsync
      // backend does it: the freeing stream waits for each of them.
      for (const c10::Stream& used : block.used_on) stream_wait_stream(block.stream, used);
      TX_CHECK(xdal_free_async(ptr, native_stream(block.stream)));
    } catch (const std::exception& e) {
      TORCH_WARN("xdal: freeing device memory failed: ", e.what());
    }
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      DeviceSwitch on(d);
      TX_CHECK(xdal_device_synchronize());
      TX_CHECK(xdal_mem_empty_cache(d));
    }
  }

  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    if (!data.get() || stream.device_type() != kXdal) return;
    std::lock_guard<std::mutex> g(mutex_);
    auto it = blocks_.find(data.get());
    if (it == blocks_.end()) return;
    Block& b = it->second;
    if (stream == b.stream) return;
    for (const auto& s : b.used_on)
      if (s == stream) return;
    b.used_on.push_back(stream);
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_device(device);
    xdal_mem_stats_t xs{};
    xs.struct_size = sizeof xs;
    TX_CHECK(xdal_mem_get_stats(device, &xs));
    std::lock_guard<std::mutex> g(mutex_);
    const auto& c = counters_[size_t(device)];
    c10::CachingDeviceAllocator::DeviceStats stats;
    stats.allocation[kAgg] = c.allocation;
    stats.active[kAgg] = c.allocation;
    // Current and peak bytes come from xdal's own accounting of the device.
    Stat bytes = c.bytes;
    bytes.current = int64_t(xs.allocated_bytes);
    bytes.peak = std::max(int64_t(xs.peak_allocated_bytes), bytes.current);
    stats.allocated_bytes[kAgg] = bytes;
    stats.active_bytes[kAgg] = bytes;
    stats.requested_bytes[kAgg] = bytes;
    Stat reserved;
    reserved.current = int64_t(xs.reserved_bytes);
    reserved.peak = std::max(int64_t(xs.peak_reserved_bytes), reserved.current);
    stats.reserved_bytes[kAgg] = reserved;
    stats.num_ooms = int64_t(xs.num_ooms);
    stats.num_device_alloc = int64_t(xs.num_allocs);
    stats.num_device_free = int64_t(xs.num_frees);
    return stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_device(device);
    std::lock_guard<std::mutex> g(mutex_);
    auto& c = counters_[size_t(device)];
    c.allocation.reset_accumulated();
    c.bytes.reset_accumulated();
    c.num_ooms = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    check_device(device);
    TX_CHECK(xdal_mem_reset_peak_stats(device));
    std::lock_guard<std::mutex> g(mutex_);
    auto& c = counters_[size_t(device)];
    c.allocation.reset_peak();
    c.bytes.reset_peak();
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device(device);
    DeviceSwitch on(device);
    size_t free_bytes = 0, total = 0;
    TX_CHECK(xdal_mem_get_info(&free_bytes, &total));
    return {free_bytes, total};
  }

 private:
  struct Counters {
    Stat allocation;
    Stat bytes;
    int64_t num_ooms = 0;
  };

  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  std::array<Counters, 64> counters_{};
};

XdalDeviceAllocator& the_device_allocator() {
  // Leaked on purpose: tensors may be freed during interpreter shutdown.
  static auto* a = new XdalDeviceAllocator();
  return *a;
}

void delete_device_memory(void* ptr) { the_device_allocator().free(ptr); }

// ---------------------------------------------------------------- pinned host allocator

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

// ---------------------------------------------------------------- generator

// The numbers of an xdal generator come from a CPU generator it owns (the
// CPU kernels of the fallback draw from it), so a seed gives the same
// sequence on xdal as on the CPU.
class XdalGenerator final : public c10::GeneratorImpl {
 public:
  explicit XdalGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val)
      : c10::GeneratorImpl(c10::Device(kXdal, device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}
  explicit XdalGenerator(c10::DeviceIndex device, at::Generator cpu)
      : c10::GeneratorImpl(c10::Device(kXdal, device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)) {}

  void set_current_seed(uint64_t seed) override { cpu_.set_current_seed(seed); }
  void set_offset(uint64_t offset) override { cpu_.set_offset(offset); }
  uint64_t get_offset() const override { return cpu_.get_offset(); }
  uint64_t current_seed() const override { return cpu_.current_seed(); }
  uint64_t seed() override { return cpu_.seed(); }
  void set_state(const c10::TensorImpl& state) override { cpu_.unsafeGetGeneratorImpl()->set_state(state); }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    return cpu_.unsafeGetGeneratorImpl()->get_state();
  }
  static c10::DeviceType device_type() { return kXdal; }

  const at::Generator& cpu() const { return cpu_; }

 private:
  XdalGenerator* clone_impl() const override { return new XdalGenerator(device().index(), cpu_.clone()); }
  at::Generator cpu_;
};

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::vector<at::Generator>* gens = [] {
    auto* v = new std::vector<at::Generator>();
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) v->push_back(at::make_generator<XdalGenerator>(d));
    return v;
  }();
  device = resolve(device);
  check_device(device);
  return (*gens)[size_t(device)];
}

at::Generator new_generator(c10::DeviceIndex device) {
  device = resolve(device);
  check_device(device);
  return at::make_generator<XdalGenerator>(device);
}

// ---------------------------------------------------------------- hooks

struct XdalHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override { return true; }
  void init() const override { TX_CHECK(xdal_init()); }
  c10::DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override { return exchange_device(device); }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchange_device(device);
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return &the_host_allocator(); }
  at::Device getDeviceFromPtr(void* data) const override {
    xdal_pointer_attributes_t attrs{};
    attrs.struct_size = sizeof attrs;
    TX_CHECK(xdal_pointer_get_attributes(data, &attrs));
    TORCH_CHECK(attrs.type == XDAL_MEMORY_TYPE_DEVICE, "xdal: ", data, " is not xdal device memory");
    return at::Device(kXdal, c10::DeviceIndex(attrs.device));
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return new_generator(device_index);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_size) const override {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), new_size);
  }
};

const bool hooks_registered [[maybe_unused]] = [] {
  at::RegisterPrivateUse1HooksInterface(new XdalHooks());
  c10::SetAllocator(kXdal, &the_device_allocator());
  at::setHostAllocator(kXdal, &the_host_allocator());
  return true;
}();

}  // namespace

void resize_storage_bytes(c10::StorageImpl* impl, size_t new_size) {
  TORCH_CHECK(impl->resizable(), "Trying to resize storage that is not resizable");
  const size_t old_size = impl->nbytes();
  const c10::DeviceIndex device =
      impl->data_ptr().device().type() == kXdal ? impl->data_ptr().device().index() : current_device();
  DeviceSwitch on(device);
  at::DataPtr fresh;
  if (new_size) fresh = impl->allocator()->allocate(new_size);
  const size_t n = std::min(old_size, new_size);
  if (n && impl->data()) {
    const c10::Stream s = current_stream(device);
    TX_CHECK(xdal_memcpy_async(fresh.get(), impl->data(), n, XDAL_MEMCPY_DEVICE_TO_DEVICE, native_stream(s)));
    record_stream(impl->data_ptr(), s);  // the old block outlives the copy
  }
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(new_size);
}

c10::Allocator* device_allocator() { return &the_device_allocator(); }
void record_stream(const c10::DataPtr& data, const c10::Stream& stream) {
  the_device_allocator().recordStream(data, stream);
}
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

// Used by ops.cpp's fallback: the generator the CPU kernel should draw
// from for an xdal generator (or the device's default one).
at::Generator cpu_generator_of(const at::Generator& gen) {
  TORCH_CHECK(gen.device().type() == kXdal, "xdal: expected an xdal generator, got one of ", gen.device());
  return static_cast<XdalGenerator*>(gen.unsafeGetGeneratorImpl())->cpu();
}

const at::Generator& xdal_default_generator(c10::DeviceIndex device) { return default_generator(device); }

}  // namespace torch_xdal
