// The legacy profiler's device timing (torch.autograd.profiler.profile(
// use_device="xdal")): torch::profiler::impl::ProfilerStubs for
// PrivateUse1, as c10::cuda's CUDA stubs do it with events. record() puts
// a timing event on the current stream of the current device and notes
// the host time; elapsed() waits for two such events and gives the time
// between them in microseconds.
#include "xdal_torch.h"

#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

namespace torch_xdal {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

class XdalProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    const c10::DeviceIndex d = current_device();
    if (device) *device = d;
    xdal_event_t raw = nullptr;
    {
      DeviceSwitch on(d);
      TX_CHECK(xdal_event_create(&raw, XDAL_EVENT_DEFAULT));
    }
    // Destroyed with the last reference the profiler holds.
    ProfilerVoidEventStub owned(raw, [](void* e) { xdal_event_destroy(static_cast<xdal_event_t>(e)); });
    if (cpu_ns) *cpu_ns = c10::getTime();
    TX_CHECK(xdal_event_record(raw, native_stream(current_stream(d))));
    *event = std::move(owned);
  }

  float elapsed(const ProfilerVoidEventStub* event, const ProfilerVoidEventStub* event2) const override {
    auto a = static_cast<xdal_event_t>(event->get());
    auto b = static_cast<xdal_event_t>(event2->get());
    TX_CHECK(xdal_event_synchronize(a));
    TX_CHECK(xdal_event_synchronize(b));
    float ms = 0;
    TX_CHECK(xdal_event_elapsed_time(&ms, a, b));
    return ms * 1000.0f;  // the profiler counts microseconds
  }

  // Annotations have no xdal counterpart (a tracer sees every call anyway).
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      const c10::DeviceIndex previous = exchange_device(d);
      op(d);
      exchange_device(previous);
    }
  }

  void synchronize() const override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      DeviceSwitch on(d);
      TX_CHECK(xdal_device_synchronize());
    }
  }
};

const bool stubs_registered [[maybe_unused]] = [] {
  static XdalProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

}  // namespace
}  // namespace torch_xdal
