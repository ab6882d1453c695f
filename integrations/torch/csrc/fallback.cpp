// The CPU fallback: every operator without a PrivateUse1 kernel runs on
// CPU copies of its operands (at::native::cpu_fallback), with xdal
// generators handed to the CPU kernels as the CPU generators they own;
// convolution_overrideable and its backward, which have no CPU kernel
// under those names, the same way by hand. Counts of the operators that
// went this way, for tests.
#include "xdal_torch.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;

std::mutex counts_mutex;
std::unordered_map<std::string, int64_t> counts;

void count_fallback(const std::string& name) {
  std::lock_guard<std::mutex> g(counts_mutex);
  counts[name]++;
}

void for_each_tensor(const c10::IValue& v, const std::function<void(const Tensor&)>& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const Tensor& t : v.toTensorList().vec()) f(t);
  } else if (v.isOptionalTensorList()) {
    for (const auto& t : v.toOptionalTensorList().vec())
      if (t) f(*t);
  }
}

// The CPU kernel runs on copies, where it cannot see that the xdal tensors
// it writes share memory with themselves or with its inputs: the checks
// PyTorch makes on the CPU (TensorIterator's, and those of the operators
// that write outside it) are made here, before anything runs, with
// PyTorch's messages. fill_ and zero_ may write overlapping elements (one
// value for all); cat refuses any overlap of its output with an input, the
// others only a partial one. masked_fill_ and index_fill_ into overlapping
// elements, which PyTorch still runs with a deprecation warning, are
// refused: the copy back could not reproduce which shared element the CPU
// writes last.
void check_fallback_writes(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t base) {
  const auto& args = op.schema().arguments();
  const std::string& name = op.schema().operator_name().name;
  // In-place operators that change only a tensor's metadata, never its
  // elements: nothing of theirs is written through overlapping memory.
  static const std::unordered_set<std::string> metadata_only = {
      "aten::resize_",  "aten::resize_as_", "aten::set_",     "aten::as_strided_", "aten::detach_",
      "aten::squeeze_", "aten::unsqueeze_", "aten::transpose_", "aten::t_",        "aten::swapdims_"};
  if (metadata_only.count(name)) return;
  const bool may_overlap_itself = name == "aten::fill_" || name == "aten::zero_";
  const bool deprecated_overlap = name == "aten::masked_fill_" || name == "aten::index_fill_";
  const bool no_overlap_at_all = name == "aten::cat" || name == "aten::_cat";
  for (size_t w = 0; w < args.size(); ++w) {
    const c10::AliasInfo* alias = args[w].alias_info();
    if (!alias || !alias->isWrite()) continue;
    for_each_tensor(stack[base + w], [&](const Tensor& out) {
      if (!out.defined() || !is_xdal(out)) return;
      if (deprecated_overlap) {
        TORCH_CHECK_NOT_IMPLEMENTED(at::has_internal_overlap(out) != at::MemOverlap::Yes, "xdal: ", name,
                                    " on a tensor whose elements share memory (an expanded tensor) is not "
                                    "supported (PyTorch deprecates it); clone() the tensor first");
      } else if (!may_overlap_itself) {
        at::assert_no_internal_overlap(out);
      }
      for (size_t i = 0; i < args.size(); ++i) {
        if (i == w) continue;
        for_each_tensor(stack[base + i], [&](const Tensor& input) {
          if (!input.defined() || !is_xdal(input)) return;
          if (no_overlap_at_all) {
            at::assert_no_overlap(out, input);
          } else {
            at::assert_no_partial_overlap(out, input);
          }
        });
      }
    });
  }
}

}  // namespace

namespace ops {

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  {
    const auto& name = op.schema().operator_name();
    count_fallback(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
  }
  const auto& schema_args = op.schema().arguments();
  const size_t n = schema_args.size();
  const size_t base = stack->size() - n;
  // The device the operator runs for: its xdal tensors' (all on one
  // device, as TensorIterator demands of native kernels), or a device argument.
  std::optional<c10::Device> device;
  auto note = [&](const Tensor& t) {
    if (!t.defined() || !is_xdal(t)) return;
    if (!device) {
      device = t.device();
    } else {
      TORCH_CHECK(*device == t.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
                  *device, " and ", t.device(), "!");
    }
  };
  for (size_t i = 0; i < n; ++i) for_each_tensor((*stack)[base + i], note);
  for (size_t i = 0; i < n && !device; ++i) {
    const c10::IValue& v = (*stack)[base + i];
    if (v.isDevice() && v.toDevice().type() == kXdal) device = v.toDevice();
  }
  // Random operators draw from the xdal generator (given or the device's
  // default), through the CPU generator it owns, under its lock.
  std::vector<std::unique_lock<std::mutex>> locks;
  for (size_t i = 0; i < n; ++i) {
    c10::TypePtr type = schema_args[i].type();
    if (type->kind() == c10::TypeKind::OptionalType) type = type->castRaw<c10::OptionalType>()->getElementType();
    if (type->kind() != c10::TypeKind::GeneratorType) continue;
    c10::IValue& v = (*stack)[base + i];
    at::Generator gen;
    if (v.isNone()) {
      if (!device) continue;
      gen = default_generator(device->index() < 0 ? current_device() : device->index());
    } else {
      gen = v.toGenerator();
      if (gen.device().type() != kXdal) continue;
    }
    locks.emplace_back(gen.mutex());
    v = c10::IValue(cpu_generator_of(gen));
  }
  c10::OptionalDeviceGuard g;
  if (device && device->index() >= 0) g.reset_device(*device);
  check_fallback_writes(op, *stack, base);
  at::native::cpu_fallback(op, stack);
}

// ---------------------------------------------------------------- convolution

// PyTorch sends convolutions on a PrivateUse1 device to these two operators,
// which have no CPU kernel for the generic fallback to call: they run
// aten::convolution(_backward) on CPU copies, as the fallback would.
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                   at::IntArrayRef output_padding, int64_t groups) {
  count_fallback("aten::convolution_overrideable");
  c10::DeviceGuard g(input.device());
  std::optional<Tensor> b;
  if (bias && bias->defined()) b = bias->cpu();
  Tensor r = at::convolution(input.cpu(), weight.cpu(), b, stride, padding, dilation, transposed, output_padding,
                             groups);
  return r.to(input.device());
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& weight, at::IntArrayRef stride,
                                                        at::IntArrayRef padding, at::IntArrayRef dilation,
                                                        bool transposed, at::IntArrayRef output_padding,
                                                        int64_t groups, std::array<bool, 3> output_mask) {
  count_fallback("aten::convolution_backward_overrideable");
  c10::DeviceGuard g(input.device());
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  std::vector<int64_t> bias_sizes{out_channels};
  auto [gi, gw, gb] = at::convolution_backward(grad_output.cpu(), input.cpu(), weight.cpu(),
                                               output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt,
                                               stride, padding, dilation, transposed, output_padding, groups,
                                               output_mask);
  auto back = [&](const Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(gi), back(gw), back(gb)};
}

}  // namespace ops

std::vector<std::pair<std::string, int64_t>> fallback_counts() {
  std::lock_guard<std::mutex> g(counts_mutex);
  return {counts.begin(), counts.end()};
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> g(counts_mutex);
  counts.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
}

}  // namespace torch_xdal
