// Graph memory pools: what the device allocator does while a graph is
// captured. As c10::cuda's private pools: tensors allocated on a stream
// that captures a graph come from that graph's pool, never from (or back
// to) eager memory, so that every replay finds its tensors at the
// addresses the capture gave them; a block freed in the capture is
// reused later in it (stream order makes that safe); graphs that name one
// pool share its blocks; a pool's memory goes back to xdal once no graph
// uses it and its last tensor is gone.
//
// The blocks are eager xdal memory (xdal_malloc_async on a stream of the
// pools' own, which never captures), not xdal's graph memory nodes: a
// capture's allocation would otherwise belong to the xdal graph and die
// with it, while the tensors the capture returns outlive it.
//
// Frees that cannot happen during a capture (memory that a capturing
// stream used: xdal_free_async on it would be recorded into the graph,
// and refused) wait until no capture is under way.
#include "xdal_torch.h"

#include <atomic>
#include <map>
#include <unordered_map>

namespace torch_xdal {
namespace {

// Blocks are sized in these steps, so that tensors of nearby sizes share.
constexpr size_t kPoolGranule = 512;
// A free block is reused for a request of at least half its size.
constexpr size_t kMaxWasteFactor = 2;

struct FreeBlock {
  void* ptr;
  c10::Stream stream;  // the stream it was last freed on
  std::vector<c10::Stream> used_on;
};

struct Pool {
  c10::DeviceIndex device = 0;
  int graphs = 0;    // captures begun into it whose graphs are not yet reset
  int capturing = 0;  // captures under way into it
  size_t blocks = 0;  // blocks it owns, free or held by tensors
  std::multimap<size_t, FreeBlock> free;  // by size
  // Freed during a capture after use on other streams: only the end of the
  // capture orders those uses before a reuse.
  std::vector<std::pair<size_t, FreeBlock>> held;
};

struct Pools {
  std::mutex mutex;
  std::map<c10::MempoolId_t, Pool> by_id;
  std::unordered_map<void*, std::pair<c10::MempoolId_t, size_t>> owner;  // block -> pool, size
  std::unordered_map<uint64_t, c10::MempoolId_t> by_capture;
  std::vector<FreeBlock> deferred;  // eager frees waiting for the end of a capture
  std::array<xdal_stream_t, XDAL_MAX_DEVICES> alloc_streams{};
};

Pools& pools() {
  // Leaked on purpose, as the allocator: tensors may die at shutdown.
  static auto* p = new Pools();
  return *p;
}

// Captures under way that allocate from a pool: the allocator's fast path
// looks at nothing else while there are none.
std::atomic<int> captures{0};
std::atomic<uint64_t> next_pool_id{1};

// New memory for a pool: on the pools' own stream of the device, which
// never captures, waited for so that any stream may use it at once.
void* new_block(Pools& p, c10::DeviceIndex device, size_t size) {
  xdal_stream_t& s = p.alloc_streams[size_t(device)];
  if (!s) {
    DeviceSwitch on(device);
    TX_CHECK(xdal_stream_create(&s, XDAL_STREAM_NON_BLOCKING, 0));
  }
  void* ptr = nullptr;
  TX_CHECK(xdal_malloc_async(&ptr, size, s));
  TX_CHECK(xdal_stream_synchronize(s));
  return ptr;
}

// Gives block `o` back to eager memory (the caller frees it), and forgets
// its pool once the pool owns nothing and no graph or capture holds it.
void disown(Pools& p, decltype(Pools::owner)::iterator o) {
  auto it = p.by_id.find(o->second.first);
  p.owner.erase(o);
  Pool& pool = it->second;
  if (--pool.blocks == 0 && pool.graphs == 0 && pool.capturing == 0) p.by_id.erase(it);
}

// Frees outside the lock what `blocks` hold (they may be deferred again).
void free_blocks(std::vector<FreeBlock> blocks) {
  for (FreeBlock& b : blocks) free_device_block(b.ptr, b.stream, b.used_on);
}

}  // namespace

c10::MempoolId_t new_graph_pool_id(bool user) {
  const uint64_t id = next_pool_id.fetch_add(1);
  // As c10::cuda: graphs' own pools are {id, 0}, users' handles {0, id}.
  return user ? c10::MempoolId_t{0, id} : c10::MempoolId_t{id, 0};
}

void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t id, uint64_t capture_id) {
  Pools& p = pools();
  std::lock_guard<std::mutex> g(p.mutex);
  auto [it, fresh] = p.by_id.try_emplace(id);
  if (fresh) it->second.device = device;
  TORCH_CHECK(it->second.device == device, "xdal: graph memory pool (", id.first, ", ", id.second,
              ") belongs to device ", int(it->second.device), ", not to device ", int(device));
  it->second.graphs++;
  it->second.capturing++;
  p.by_capture[capture_id] = id;
  captures.fetch_add(1);
}

void end_allocate_to_pool(uint64_t capture_id) {
  Pools& p = pools();
  std::vector<FreeBlock> deferred;
  {
    std::lock_guard<std::mutex> g(p.mutex);
    auto c = p.by_capture.find(capture_id);
    if (c == p.by_capture.end()) return;
    Pool& pool = p.by_id.at(c->second);
    p.by_capture.erase(c);
    captures.fetch_sub(1);
    if (--pool.capturing == 0) {
      for (auto& [size, block] : pool.held) pool.free.emplace(size, std::move(block));
      pool.held.clear();
    }
    deferred.swap(p.deferred);
  }
  free_blocks(std::move(deferred));
}

void release_graph_pool(c10::MempoolId_t id) {
  Pools& p = pools();
  std::vector<FreeBlock> unused;
  {
    std::lock_guard<std::mutex> g(p.mutex);
    auto it = p.by_id.find(id);
    if (it == p.by_id.end() || --it->second.graphs > 0) return;
    // No graph replays this pool's blocks any more: the free ones go back
    // to xdal now, the others when their tensors die.
    std::multimap<size_t, FreeBlock> free = std::move(it->second.free);
    it->second.free.clear();
    if (it->second.blocks == 0 && it->second.capturing == 0) p.by_id.erase(it);
    for (auto& [size, block] : free) {
      disown(p, p.owner.find(block.ptr));
      unused.push_back(std::move(block));
    }
  }
  free_blocks(std::move(unused));
}

void* graph_pool_allocate(const c10::Stream& stream, size_t n) {
  if (captures.load(std::memory_order_acquire) == 0) return nullptr;
  uint64_t capture = 0;
  if (capture_status(stream, &capture) != XDAL_CAPTURE_STATUS_ACTIVE) return nullptr;
  Pools& p = pools();
  std::lock_guard<std::mutex> g(p.mutex);
  auto c = p.by_capture.find(capture);
  if (c == p.by_capture.end()) return nullptr;  // a capture torch_xdal did not begin
  Pool& pool = p.by_id.at(c->second);
  const size_t size = (n + kPoolGranule - 1) / kPoolGranule * kPoolGranule;
  auto best = pool.free.lower_bound(size);
  if (best != pool.free.end() && best->first <= size * kMaxWasteFactor) {
    void* ptr = best->second.ptr;
    pool.free.erase(best);
    return ptr;
  }
  void* ptr = new_block(p, pool.device, size);
  p.owner.emplace(ptr, std::make_pair(c->second, size));
  pool.blocks++;
  return ptr;
}

bool graph_pool_free(void* ptr, const c10::Stream& stream, const std::vector<c10::Stream>& used_on) {
  Pools& p = pools();
  std::lock_guard<std::mutex> g(p.mutex);
  auto o = p.owner.find(ptr);
  if (o == p.owner.end()) return false;
  const size_t size = o->second.second;
  Pool& pool = p.by_id.at(o->second.first);  // a pool lives while it owns blocks
  if (pool.graphs == 0 && pool.capturing == 0) {
    // Its graphs are gone: the block is eager memory again.
    disown(p, o);
    return false;
  }
  FreeBlock block{ptr, stream, used_on};
  if (pool.capturing > 0 && !block.used_on.empty()) {
    pool.held.emplace_back(size, std::move(block));
  } else {
    pool.free.emplace(size, std::move(block));
  }
  return true;
}

bool graph_capture_under_way() { return captures.load(std::memory_order_acquire) != 0; }

bool defer_free_while_capturing(void* ptr, const c10::Stream& stream, const std::vector<c10::Stream>& used_on) {
  if (captures.load(std::memory_order_acquire) == 0) return false;
  bool capturing = stream_is_capturing(stream);
  for (const c10::Stream& s : used_on) capturing = capturing || stream_is_capturing(s);
  if (!capturing) return false;
  Pools& p = pools();
  std::lock_guard<std::mutex> g(p.mutex);
  p.deferred.push_back({ptr, stream, used_on});
  return true;
}

}  // namespace torch_xdal
