// The device allocator: a c10::DeviceAllocator on xdal's stream-ordered
// pool (xdal_malloc_async / xdal_free_async on the current stream), with
// recordStream, the statistics behind torch.accelerator.memory_*, and the
// resizing of device storages.
#include "xdal_torch.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace torch_xdal {
namespace {

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
    bool pooled;  // from a graph memory pool (graph_pools.cpp)
  };

  c10::DataPtr allocate(size_t n) override {
    const c10::DeviceIndex device = current_device();
    if (n == 0) return {nullptr, nullptr, &delete_device_memory, c10::Device(kXdal, device)};
    Counters& counters = counters_of(device);  // checks the device before any memory is taken
    const c10::Stream stream = current_stream(device);
    void* ptr = graph_pool_allocate(stream, n);
    const bool pooled = ptr != nullptr;
    if (!pooled) {
      // Allocates on the stream's device, whatever the current one.
      xdal_status_t s = xdal_malloc_async(&ptr, n, native_stream(stream));
      if (s == XDAL_ERROR_OUT_OF_MEMORY && !graph_capture_under_way()) {
        // As c10::cuda does: wait for pending frees, give the pool's cached
        // blocks back, and try once more (not during a capture, which a
        // device synchronization would break).
        {
          DeviceSwitch on(device);
          TX_CHECK(xdal_device_synchronize());
        }
        TX_CHECK(xdal_mem_empty_cache(device));
        s = xdal_malloc_async(&ptr, n, native_stream(stream));
      }
      if (s == XDAL_ERROR_OUT_OF_MEMORY) {
        std::lock_guard<std::mutex> g(mutex_);
        counters.num_ooms++;
      }
      TX_CHECK(s);
    }
    {
      std::lock_guard<std::mutex> g(mutex_);
      blocks_.emplace(ptr, Block{device, n, stream, {}, pooled});
      counters.allocation.increase(1);
      counters.bytes.increase(n);
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
    Block block{0, 0, c10::Stream(c10::Stream::DEFAULT, c10::Device(kXdal, 0)), {}, false};
    {
      std::lock_guard<std::mutex> g(mutex_);
      auto it = blocks_.find(ptr);
      if (it == blocks_.end()) return;
      block = std::move(it->second);
      blocks_.erase(it);
      auto& c = counters_[size_t(block.device)];  // checked by allocate
      c.allocation.decrease(1);
      c.bytes.decrease(block.size);
    }
    if (block.pooled && graph_pool_free(ptr, block.stream, block.used_on)) return;
    free_device_block(ptr, block.stream, block.used_on);
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
    const auto& c = counters_of(device);
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
    auto& c = counters_of(device);
    c.allocation.reset_accumulated();
    c.bytes.reset_accumulated();
    c.num_ooms = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    check_device(device);
    TX_CHECK(xdal_mem_reset_peak_stats(device));
    std::lock_guard<std::mutex> g(mutex_);
    auto& c = counters_of(device);
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

  // The counters of `device`, which must be one of ours (c10::Error if not).
  Counters& counters_of(c10::DeviceIndex device) {
    check_device(device);  // device_count() <= XDAL_MAX_DEVICES
    return counters_[size_t(device)];
  }

  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  std::array<Counters, XDAL_MAX_DEVICES> counters_{};
};

XdalDeviceAllocator& the_device_allocator() {
  // Leaked on purpose: tensors may be freed during interpreter shutdown.
  static auto* a = new XdalDeviceAllocator();
  return *a;
}

void delete_device_memory(void* ptr) { the_device_allocator().free(ptr); }

const bool allocator_registered [[maybe_unused]] = [] {
  c10::SetAllocator(kXdal, &the_device_allocator());
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

void free_device_block(void* ptr, const c10::Stream& stream, const std::vector<c10::Stream>& used_on) noexcept {
  try {
    if (defer_free_while_capturing(ptr, stream, used_on)) return;
    // recordStream: the block is reused only after every stream it was
    // used on has reached this point, as c10::cuda's cudaMallocAsync
    // backend does it: the freeing stream waits for each of them.
    for (const c10::Stream& used : used_on) stream_wait_stream(stream, used);
    TX_CHECK(xdal_free_async(ptr, native_stream(stream)));
  } catch (const std::exception& e) {
    TORCH_WARN("xdal: freeing device memory failed: ", e.what());
  }
}

c10::Allocator* device_allocator() { return &the_device_allocator(); }
void record_stream(const c10::DataPtr& data, const c10::Stream& stream) {
  the_device_allocator().recordStream(data, stream);
}

}  // namespace torch_xdal
