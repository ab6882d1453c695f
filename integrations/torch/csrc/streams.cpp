// Streams: each device's default stream, its pools of streams per priority
// level (created lazily, handed out round robin), the calling thread's
// current stream per device, and one stream waiting for another (an
// event). How c10::Stream ids name xdal streams: see xdal_torch.h.
#include "xdal_torch.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace torch_xdal {

namespace {

constexpr int kPoolSize = 32;

struct DevicePools {
  std::once_flag once;
  int levels = 1;
  int least = 0;
  std::array<std::array<xdal_stream_t, kPoolSize>, kMaxPriorityLevels> streams{};
  std::array<std::atomic<uint32_t>, kMaxPriorityLevels> counters{};
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
    p.levels = std::clamp(least - greatest + 1, 1, kMaxPriorityLevels);
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
  device = resolve_device(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kXdal, device), current_id(device));
}

c10::Stream default_stream(c10::DeviceIndex device) {
  device = resolve_device(device);
  check_device(device);
  return c10::Stream(c10::Stream::DEFAULT, c10::Device(kXdal, device));
}

c10::Stream stream_from_pool(c10::DeviceIndex device, int priority) {
  device = resolve_device(device);
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

}  // namespace torch_xdal
