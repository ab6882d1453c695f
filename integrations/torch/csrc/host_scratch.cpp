// Scratch memory of host kernels: the CPU kernels that the host-kernel
// fallback runs on a backend's worker thread take their temporaries
// (oneDNN's scratchpads and reorders, results before they are copied)
// from a cache kept here, as a GPU runtime keeps its kernels' workspaces,
// instead of from malloc. On the worker glibc serves them from an arena
// of its own that gives large blocks back to the system at every free, so
// each kernel took page faults for all of its temporaries again (a conv
// net's step ran at 0.63x the CPU's instead of 0.87x).
//
// The process's CPU allocator is wrapped: on any other thread, and for
// blocks under 64 KiB, it is the allocator it wraps, unchanged.
#include "xdal_torch.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace torch_xdal {
namespace {

thread_local bool in_host_kernel = false;

// Smaller blocks stay with malloc, whose small bins keep their pages.
constexpr size_t kMinCachedBytes = 64 * 1024;
// Free blocks kept beyond this many bytes go back to the system.
constexpr size_t kMaxCachedBytes = size_t(1) << 30;

// Blocks handed out (pointer -> bytes) and free ones by size. Never
// destroyed: a tensor may be freed during the process's exit.
struct ScratchCache {
  std::mutex mutex;
  std::unordered_map<void*, size_t> live;
  std::unordered_map<size_t, std::vector<void*>> free;
  size_t free_bytes = 0;
};

ScratchCache& cache() {
  static ScratchCache* c = new ScratchCache;
  return *c;
}

c10::DeleterFnPtr wrapped_raw_deleter = nullptr;

// The deleter of cached blocks, and the allocator's raw deleter: a
// pointer the cache did not hand out is the wrapped allocator's.
void free_scratch(void* ptr) {
  if (ptr == nullptr) return;
  ScratchCache& c = cache();
  bool ours = false;
  {
    std::lock_guard<std::mutex> g(c.mutex);
    auto it = c.live.find(ptr);
    if (it != c.live.end()) {
      ours = true;
      const size_t bytes = it->second;
      c.live.erase(it);
      if (c.free_bytes + bytes <= kMaxCachedBytes) {
        c.free[bytes].push_back(ptr);
        c.free_bytes += bytes;
        return;
      }
    }
  }
  if (ours) {
    c10::free_cpu(ptr);
  } else if (wrapped_raw_deleter != nullptr) {
    wrapped_raw_deleter(ptr);
  }
}

class HostKernelCpuAllocator final : public c10::Allocator {
 public:
  explicit HostKernelCpuAllocator(c10::Allocator* wrapped) : wrapped_(wrapped) {}

  c10::DataPtr allocate(size_t n) override {
    if (!in_host_kernel || n < kMinCachedBytes) return wrapped_->allocate(n);
    ScratchCache& c = cache();
    void* ptr = nullptr;
    {
      std::lock_guard<std::mutex> g(c.mutex);
      auto it = c.free.find(n);
      if (it != c.free.end() && !it->second.empty()) {
        ptr = it->second.back();
        it->second.pop_back();
        c.free_bytes -= n;
      }
    }
    if (ptr == nullptr) ptr = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> g(c.mutex);
      c.live.emplace(ptr, n);
    }
    // The context is the data (raw_allocate, which oneDNN's allocator
    // uses, requires it).
    return {ptr, ptr, &free_scratch, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_scratch; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  c10::Allocator* wrapped_;
};

}  // namespace

HostScratchScope::HostScratchScope() : was_(in_host_kernel) { in_host_kernel = true; }
HostScratchScope::~HostScratchScope() { in_host_kernel = was_; }

void install_host_scratch_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Allocator* wrapped = c10::GetCPUAllocator();
    wrapped_raw_deleter = wrapped->raw_deleter();
    // The allocator array owns what it is given; this one lives as long as
    // the process.
    c10::SetCPUAllocator(new HostKernelCpuAllocator(wrapped), /*priority=*/0);
  });
}

}  // namespace torch_xdal
