// The device guard: c10::impl::DeviceGuardImplInterface for PrivateUse1,
// PyTorch's entry to devices, streams and events. Each method maps onto
// device.cpp, streams.cpp or one xdal event call.
#include "xdal_torch.h"

#include <c10/core/DeviceCapability.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace torch_xdal {
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
    return stream_from_pool(d.index(), high_priority ? -kMaxPriorityLevels : 0);
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
    DeviceSwitch on(resolve_device(device_index));
    TX_CHECK(xdal_device_synchronize());
  }
  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
    record_stream(data, stream);
  }
  bool isStreamCapturing(const c10::Stream& stream) const override { return stream_is_capturing(stream); }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, XdalGuardImpl)

}  // namespace
}  // namespace torch_xdal
