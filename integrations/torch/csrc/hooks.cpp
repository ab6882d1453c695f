// The PrivateUse1 hooks (at::PrivateUse1HooksInterface): what ATen asks
// of a backend outside the device guard: availability, pinned memory,
// the device of a pointer, generators, storage resizing.
#include "xdal_torch.h"

#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Storage.h>

namespace torch_xdal {
namespace {

struct XdalHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override { return true; }
  void init() const override {
    use_runtime();
    TX_CHECK(xdal_init());
  }
  c10::DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override { return exchange_device(device); }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchange_device(device);
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return host_allocator(); }
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
  return true;
}();

}  // namespace
}  // namespace torch_xdal
