// Random numbers: each device's default XdalGenerator and new ones. An
// xdal generator's numbers come from a CPU generator it owns, which the
// CPU fallback hands to the CPU kernels of random operators.
#include "xdal_torch.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include <utility>
#include <vector>

namespace torch_xdal {
namespace {

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

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::vector<at::Generator>* gens = [] {
    auto* v = new std::vector<at::Generator>();
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) v->push_back(at::make_generator<XdalGenerator>(d));
    return v;
  }();
  device = resolve_device(device);
  check_device(device);
  return (*gens)[size_t(device)];
}

at::Generator new_generator(c10::DeviceIndex device) {
  device = resolve_device(device);
  check_device(device);
  return at::make_generator<XdalGenerator>(device);
}

at::Generator cpu_generator_of(const at::Generator& gen) {
  TORCH_CHECK(gen.device().type() == kXdal, "xdal: expected an xdal generator, got one of ", gen.device());
  return static_cast<XdalGenerator*>(gen.unsafeGetGeneratorImpl())->cpu();
}

}  // namespace torch_xdal
