// The device allocator: a c10::DeviceAllocator on xdal's stream-ordered
// pool (xdal_malloc_async / xdal_free_async on the current stream), with
// recordStream, the statistics behind torch.accelerator.memory_*, and the
// resizing of device storages.
//
// Freed blocks are kept for reuse on the stream that freed them, by exact
// size, as c10::cuda's caching allocator keeps its blocks per stream:
// stream order makes the reuse safe with no synchronization, and a
// tensor of a size seen before (every step of a training loop) costs no
// call into xdal, whose allocation entry (handle, capture and tracing
// checks, the pool, the allocation registry) is most of a small
// operator's time otherwise. Exact sizes keep xdal's range checks exact:
// a kernel that overruns a tensor still overruns its xdal allocation.
// empty_cache, and an allocation that runs out of memory, give the cached
// blocks back to xdal.
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
// Bytes of freed blocks kept per device at most; past this, a freed block
// goes back to xdal's pool at once.
constexpr size_t kMaxCachedBytes = size_t(256) << 20;

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
    std::unique_lock<std::mutex> g(mutex_);
    // (Taken during an xdal capture too: the graph then uses an eager
    // block, as it uses a tensor allocated before the capture.)
    if (!ptr) ptr = take_cached(stream, n);
    if (!ptr) {
      g.unlock();
      ptr = allocate_from_xdal(device, stream, n);
      g.lock();
    }
    blocks_.emplace(ptr, Block{device, n, stream, {}, pooled});
    counters.allocation.increase(1);
    counters.bytes.increase(n);
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
      if (!block.pooled && keep_cached(ptr, block)) return;
    }
    if (block.pooled && graph_pool_free(ptr, block.stream, block.used_on)) return;
    free_device_block(ptr, block.stream, block.used_on);
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) release_cached(d);
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
    // The bytes tensors hold (xdal's allocated bytes include the blocks
    // cached here; they count as reserved, as on c10::cuda).
    stats.allocated_bytes[kAgg] = c.bytes;
    stats.active_bytes[kAgg] = c.bytes;
    stats.requested_bytes[kAgg] = c.bytes;
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
  // A cached block's place: the stream that freed it and its exact size.
  struct CacheKey {
    c10::Stream stream;
    size_t size;
    bool operator==(const CacheKey& o) const { return stream == o.stream && size == o.size; }
  };
  struct CacheKeyHash {
    size_t operator()(const CacheKey& k) const { return std::hash<c10::Stream>()(k.stream) ^ k.size * 31; }
  };

  // A new block of `n` bytes from xdal's pool, on `stream`'s device
  // whatever the current one. On XDAL_ERROR_OUT_OF_MEMORY, as c10::cuda
  // does: wait for pending frees, give the cached blocks back, and try
  // once more (not during a capture, which a device synchronization would
  // break); then torch.OutOfMemoryError.
  void* allocate_from_xdal(c10::DeviceIndex device, const c10::Stream& stream, size_t n) {
    void* ptr = nullptr;
    xdal_status_t s = xdal_malloc_async(&ptr, n, native_stream(stream));
    if (s == XDAL_ERROR_OUT_OF_MEMORY && !graph_capture_under_way()) {
      release_cached(device);
      s = xdal_malloc_async(&ptr, n, native_stream(stream));
    }
    if (s == XDAL_ERROR_OUT_OF_MEMORY) {
      std::lock_guard<std::mutex> g(mutex_);
      counters_[size_t(device)].num_ooms++;
    }
    TX_CHECK(s);
    return ptr;
  }

  // Whether `stream` takes part in an xdal capture (or cannot say): one
  // that torch_xdal did not begin. A block freed there must be freed by
  // xdal, in the graph: cached, it would be handed to an eager tensor
  // while the graph's replays still write to it.
  static bool captured_by_xdal(const c10::Stream& stream) noexcept {
    try {
      xdal_capture_status_t status = XDAL_CAPTURE_STATUS_NONE;
      return xdal_stream_get_capture_info(native_stream(stream), &status, nullptr) != XDAL_SUCCESS ||
             status != XDAL_CAPTURE_STATUS_NONE;
    } catch (const std::exception&) {
      return true;  // a stream torch_xdal cannot name: leave it to xdal
    }
  }

  // A block cached for `n` bytes on `stream`, or nullptr. Under mutex_.
  void* take_cached(const c10::Stream& stream, size_t n) {
    auto it = cache_.find(CacheKey{stream, n});
    if (it == cache_.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    cached_bytes_[size_t(stream.device_index())] -= n;
    return ptr;
  }

  // Keeps a freed block for reuse on its stream; false when it must go
  // back to xdal now: it was used on other streams (recordStream: the
  // free waits for them), a capture is under way (the free may have to
  // wait for it), or the device's cache is full. Under mutex_.
  bool keep_cached(void* ptr, const Block& block) {
    if (!block.used_on.empty() || graph_capture_under_way() || captured_by_xdal(block.stream)) return false;
    size_t& cached = cached_bytes_[size_t(block.device)];
    if (cached + block.size > kMaxCachedBytes) return false;
    try {
      cache_[CacheKey{block.stream, block.size}].push_back(ptr);
    } catch (const std::bad_alloc&) {
      return false;  // no room to remember it: it goes back to xdal
    }
    cached += block.size;
    return true;
  }

  // Gives `device`'s cached blocks back to xdal, once the device's work
  // is done (a block's last use may still be pending on its stream; the
  // stream itself may be gone), and xdal's pool back to the device.
  void release_cached(c10::DeviceIndex device) {
    DeviceSwitch on(device);
    TX_CHECK(xdal_device_synchronize());
    std::vector<void*> blocks;
    {
      std::lock_guard<std::mutex> g(mutex_);
      for (auto it = cache_.begin(); it != cache_.end();) {
        if (it->first.stream.device_index() != device) {
          ++it;
          continue;
        }
        blocks.insert(blocks.end(), it->second.begin(), it->second.end());
        it = cache_.erase(it);
      }
      cached_bytes_[size_t(device)] = 0;
    }
    for (void* ptr : blocks) TX_CHECK(xdal_free(ptr));
    TX_CHECK(xdal_mem_empty_cache(device));
  }

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
  std::unordered_map<CacheKey, std::vector<void*>, CacheKeyHash> cache_;
  std::array<size_t, XDAL_MAX_DEVICES> cached_bytes_{};
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
