// The CPU fallback: every operator without a PrivateUse1 kernel runs on
// CPU copies of its operands (at::native::cpu_fallback), with xdal
// generators handed to the CPU kernels as the CPU generators they own;
// convolution_overrideable and its backward, which have no CPU kernel
// under those names, the same way by hand. Counts of the operators that
// went this way, for tests.
#include "xdal_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <algorithm>
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

// Whether two elements of a tensor of these sizes and strides may be one
// memory location: dimensions sorted by stride, each stride must pass the
// farthest element the smaller ones reach (exact for PyTorch's
// non-negative strides; stride 0 of an expanded dimension fails it).
bool may_overlap_itself(at::IntArrayRef sizes, at::IntArrayRef strides) {
  // (stride, size) of dimensions of more than one element; on the stack, as
  // this runs for every result of the host path.
  c10::SmallVector<std::pair<int64_t, int64_t>, 8> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return false;
    if (sizes[d] > 1) dims.emplace_back(strides[d], sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += stride * (size - 1);
  }
  return false;
}

namespace {

using at::Tensor;

OperatorCounts counts;

void count_fallback(const std::string& name) { counts.add(name); }

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

// In-place operators that change only a tensor's metadata, never its
// elements (they have kernels of their own; should one come here, it must
// not be copied back as values).
bool is_metadata_only(const std::string& name) {
  static const std::unordered_set<std::string> names = {
      "aten::resize_",  "aten::resize_as_", "aten::set_",     "aten::as_strided_", "aten::detach_",
      "aten::squeeze_", "aten::unsqueeze_", "aten::transpose_", "aten::t_",        "aten::swapdims_"};
  return names.count(name) != 0;
}

// The CPU kernel normally runs on copies of the xdal operands, where it
// cannot see that a tensor it writes shares memory with itself (an expanded
// tensor) or with another operand. Then the operands are mirrored instead:
// each xdal storage a written tensor lives in is copied to the host once (the
// byte range its tensors span), every xdal operand in it becomes a CPU tensor
// with its own offset and strides over that copy, the CPU kernel runs on
// those, and the bytes are copied back. The CPU kernel sees the same sharing
// the xdal tensors have, so it refuses what PyTorch refuses on the CPU, with
// its message, and computes what it computes there (expanded targets of
// masked_fill_, index_put_ or triu_ included, deprecation warnings too).
bool writes_shared_memory(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t base) {
  const auto& args = op.schema().arguments();
  if (is_metadata_only(op.schema().operator_name().name)) return false;
  std::vector<Tensor> operands;
  for (size_t i = 0; i < args.size(); ++i)
    for_each_tensor(stack[base + i], [&](const Tensor& t) {
      if (t.defined() && is_xdal(t)) operands.push_back(t);
    });
  bool shared = false;
  for (size_t w = 0; w < args.size() && !shared; ++w) {
    const c10::AliasInfo* alias = args[w].alias_info();
    if (!alias || !alias->isWrite()) continue;
    for_each_tensor(stack[base + w], [&](const Tensor& out) {
      if (shared || !out.defined() || !is_xdal(out)) return;
      if (may_overlap_itself(out.sizes(), out.strides())) {
        shared = true;
        return;
      }
      int64_t same_storage = 0;  // out itself is one of the operands
      for (const Tensor& t : operands) same_storage += t.storage().is_alias_of(out.storage()) ? 1 : 0;
      shared = same_storage > 1;
    });
  }
  return shared;
}

// One xdal storage copied to the host: the bytes [lo, hi) its operands span.
struct HostMirror {
  c10::Storage storage;
  int64_t lo = 0, hi = 0;
  bool written = false;
  Tensor device_bytes;
  Tensor host_bytes;
};

// An xdal operand's CPU twin: the tensor the kernel gets (`host`), over
// the storage's mirror or, for a conjugate or negative view, resolved from
// `view`, the view over the mirror; and for a written one, the twin's
// layout before the kernel ran (a kernel that resizes an out= changes it).
struct Twin {
  Tensor device, host, view;
  bool written = false;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  // Written back through its view (one the kernel resized goes whole).
  bool through_view() const { return view.defined() && host.sizes().equals(view.sizes()); }
};

void run_on_host_mirrors(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t base,
                         c10::Device device) {
  const auto& args = op.schema().arguments();
  const size_t n = args.size();
  auto is_written = [&](size_t i) { return args[i].alias_info() && args[i].alias_info()->isWrite(); };

  // The byte range each storage's operands span; the low end aligned to 16
  // bytes so that every operand's offset stays a whole number of elements.
  std::unordered_map<const c10::StorageImpl*, HostMirror> mirrors;
  for (size_t i = 0; i < n; ++i)
    for_each_tensor((*stack)[base + i], [&](const Tensor& t) {
      if (!t.defined() || !is_xdal(t)) return;
      const int64_t item = static_cast<int64_t>(t.element_size());
      int64_t lo = t.storage_offset() * item, hi = lo;
      if (t.numel() > 0) {
        int64_t last = 0;
        for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
        hi = lo + (last + 1) * item;
      }
      auto [it, fresh] = mirrors.try_emplace(t.storage().unsafeGetStorageImpl(), HostMirror{t.storage(), lo, hi, false, Tensor(), Tensor()});
      HostMirror& m = it->second;
      if (!fresh) {
        m.lo = std::min(m.lo, lo);
        m.hi = std::max(m.hi, hi);
      }
      m.written = m.written || is_written(i);
    });
  for (auto& [impl, m] : mirrors) {
    m.lo -= m.lo % 16;
    m.device_bytes = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(device));
    m.device_bytes.set_(m.storage, m.lo, {m.hi - m.lo}, {1});
    m.host_bytes = m.device_bytes.cpu();
  }

  // Each xdal operand as a CPU tensor over its storage's mirror, one per
  // xdal tensor: an operand passed twice (cat's input and its out=) is one
  // tensor to the CPU kernel too, which checks identity. A conjugate or
  // negative view is handed over resolved (its values, in memory of their
  // own), as PyTorch's fallbacks for those bits hand it to a CPU kernel
  // (which a redispatch to that kernel skips); written, the values go back
  // through the view after the kernel. Without this the bits were lost:
  // solve_triangular into its own conj() input solved the unconjugated
  // system, silently.
  std::unordered_map<const c10::TensorImpl*, Twin> twins;
  auto on_host = [&](const Tensor& t, bool write) -> Tensor {
    if (!t.defined() || !is_xdal(t)) return t;
    auto [it, fresh] = twins.try_emplace(t.unsafeGetTensorImpl());
    Twin& twin = it->second;
    if (fresh) {
      const HostMirror& m = mirrors.at(t.storage().unsafeGetStorageImpl());
      const int64_t item = static_cast<int64_t>(t.element_size());
      Tensor view = at::empty({0}, t.options().device(at::kCPU));
      view.set_(m.host_bytes.storage(), (t.storage_offset() * item - m.lo) / item, t.sizes(), t.strides());
      twin.device = t;
      twin.host = view;
      if (t.is_conj() || t.is_neg()) {
        view._set_conj(t.is_conj());
        view._set_neg(t.is_neg());
        twin.view = view;
        twin.host = view.resolve_conj().resolve_neg();
      }
    }
    if (write && !twin.written) {
      twin.written = true;
      twin.sizes = twin.host.sizes().vec();
      twin.strides = twin.host.strides().vec();
      twin.offset = twin.host.storage_offset();
    }
    return twin.host;
  };
  std::vector<c10::IValue> originals(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  for (size_t i = 0; i < n; ++i) {
    c10::IValue& v = (*stack)[base + i];
    const bool write = is_written(i);
    if (v.isTensor()) {
      v = on_host(v.toTensor(), write);
    } else if (v.isTensorList()) {
      c10::List<Tensor> list;
      for (const Tensor& t : v.toTensorList().vec()) list.push_back(on_host(t, write));
      v = list;
    } else if (v.isOptionalTensorList()) {
      c10::List<std::optional<Tensor>> list;
      for (const auto& t : v.toOptionalTensorList().vec()) list.push_back(t ? std::optional(on_host(*t, write)) : t);
      v = list;
    }
  }

  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  // Written resolved twins through their views (one the kernel resized
  // goes whole, below), the bytes back, then an out= the kernel resized or
  // moved: it takes the CPU's result whole (as the fallback's copies do).
  for (auto& [impl, w] : twins)
    if (w.written && w.through_view()) w.view.copy_(w.host);
  for (auto& [impl, m] : mirrors)
    if (m.written && m.host_bytes.numel() > 0) m.device_bytes.copy_(m.host_bytes);
  for (const auto& [impl, w] : twins) {
    if (!w.written || w.through_view()) continue;
    const HostMirror& m = mirrors.at(w.device.storage().unsafeGetStorageImpl());
    const bool moved = !w.host.storage().is_alias_of(m.host_bytes.storage());
    if (moved || !w.host.sizes().equals(w.sizes) || !w.host.strides().equals(w.strides) ||
        w.host.storage_offset() != w.offset)
      at::_copy_from_and_resize(w.host, w.device);
  }

  // Results: an alias of a written argument is that argument; the others
  // go to the device.
  const auto& returns = op.schema().returns();
  const size_t first_result = stack->size() - returns.size();
  for (size_t r = 0; r < returns.size(); ++r) {
    c10::IValue& v = (*stack)[first_result + r];
    const c10::AliasInfo* alias = returns[r].alias_info();
    if (alias && alias->isWrite()) {
      for (size_t i = 0; i < n; ++i)
        if (args[i].alias_info() && args[i].alias_info()->beforeSets() == alias->beforeSets()) v = originals[i];
      continue;
    }
    if (v.isTensor()) {
      const Tensor& t = v.toTensor();
      if (t.defined()) v = t.to(device);
    } else if (v.isTensorList()) {
      c10::List<Tensor> list;
      for (const Tensor& t : v.toTensorList().vec()) list.push_back(t.defined() ? t.to(device) : t);
      v = list;
    }
  }
}

// TorchScript builds a Tensor?[] argument (the indices of the index
// operators) as a list whose element type equals, but is not the object
// that, IValue::isOptionalTensorList compares with by address: nothing
// below would see its tensors, and an xdal index would reach a CPU kernel.
// Such lists (and Tensor[] ones alike) are rebuilt with the canonical type.
void canonicalize_tensor_lists(const c10::FunctionSchema& schema, torch::jit::Stack& stack, size_t base) {
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    c10::IValue& v = stack[base + i];
    if (!v.isList() || v.isTensorList() || v.isOptionalTensorList()) continue;
    const auto list_type = args[i].type()->cast<c10::ListType>();
    if (!list_type) continue;
    const c10::TypePtr element = list_type->getElementType();
    if (element->kind() == c10::TypeKind::TensorType) {
      c10::List<Tensor> list;
      for (const c10::IValue& e : v.toListRef()) list.push_back(e.toTensor());
      v = list;
    } else if (const auto optional = element->cast<c10::OptionalType>();
               optional && optional->getElementType()->kind() == c10::TypeKind::TensorType) {
      c10::List<std::optional<Tensor>> list;
      for (const c10::IValue& e : v.toListRef())
        list.push_back(e.isNone() ? std::nullopt : std::optional<Tensor>(e.toTensor()));
      v = list;
    }
  }
}

// An operator of xdal tensors takes its other tensor operands on the same
// device, as a native kernel would (TensorIterator and the generated
// kernels' common-device check refuse the rest): another xdal device, or
// the CPU, which would otherwise compute with them, give a result a device
// kernel never gives, and write a CPU out= the caller could not have
// meant. Allowed, as on CUDA: a CPU scalar (0-dimensional) read as a
// value, and the indices of the index operators (the Tensor?[] arguments).
// A CPU tensor indexed with xdal indices (the operator came here for its
// indices), or indices on another xdal device, are refused as CUDA's index
// kernels refuse them, naming the indexed tensor's device.
void refuse_other_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t base,
                          c10::Device device) {
  const auto& args = op.schema().arguments();
  // Asked only of a tensor on another device: every call passes here.
  auto indexing = [&] {
    for (size_t i = 0; i < args.size(); ++i)
      if (stack[base + i].isOptionalTensorList()) return true;
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = stack[base + i];
    const bool written = args[i].alias_info() && args[i].alias_info()->isWrite();
    const bool indices = v.isOptionalTensorList();
    for_each_tensor(v, [&](const Tensor& t) {
      if (!t.defined() || t.device() == device) return;
      TORCH_CHECK(!(i == 0 && t.dim() > 0 && indexing()),
                  "indices should be either on cpu or on the same device as the indexed tensor (", t.device(), ")");
      TORCH_CHECK(!indices || t.device().is_cpu(),
                  "indices should be either on cpu or on the same device as the indexed tensor (", device, ")");
      const bool cpu_value = t.device().is_cpu() && (indices || (t.dim() == 0 && !written));
      TORCH_CHECK(cpu_value, "Expected all tensors to be on the same device, but found at least two devices, ", device,
                  " and ", t.device(), "! (argument '", args[i].name(), "' of ", op.schema().operator_name(),
                  written ? ", which writes it" : "", ")");
    });
  }
}

}  // namespace

namespace ops {

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  OperatorScope named(op.schema().name().c_str(),
                      "it has no xdal kernel here and runs on the CPU through copies of its operands");
  {
    const auto& name = op.schema().operator_name();
    count_fallback(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
  }
  const auto& schema_args = op.schema().arguments();
  const size_t n = schema_args.size();
  const size_t base = stack->size() - n;
  canonicalize_tensor_lists(op.schema(), *stack, base);
  // The device the operator runs for: its xdal tensors' (all on one
  // device, as TensorIterator demands of native kernels), or a device argument.
  std::optional<c10::Device> device;
  auto note = [&](const Tensor& t) {
    if (!device && t.defined() && is_xdal(t)) device = t.device();
  };
  for (size_t i = 0; i < n && !device; ++i) for_each_tensor((*stack)[base + i], note);
  if (device) refuse_other_devices(op, *stack, base, *device);
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
  std::optional<DeviceSwitch> on;
  if (device) on.emplace(device->index());
  if (device && writes_shared_memory(op, *stack, base)) {
    run_on_host_mirrors(op, stack, base, *device);
  } else if (device && run_as_host_kernel(op, stack, base, *device)) {
    // Enqueued on the device's current stream, over the device memory.
  } else {
    at::native::cpu_fallback(op, stack);
  }
}

// ---------------------------------------------------------------- convolution

// PyTorch sends convolutions on a PrivateUse1 device to these two operators,
// which have no CPU kernel for the generic fallback to call: they run
// aten::convolution(_backward) on CPU copies, as the fallback would.
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                   at::IntArrayRef output_padding, int64_t groups) {
  count_fallback("aten::convolution_overrideable");
  DeviceSwitch on(input.device().index());
  static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
  torch::jit::Stack stack{input, weight, bias, stride, padding, dilation, transposed, output_padding, groups};
  if (run_as_host_kernel(op, &stack, 0, input.device(), "aten::convolution_overrideable"))
    return stack.at(0).toTensor();
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
  DeviceSwitch on(input.device().index());
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  std::vector<int64_t> bias_sizes{out_channels};
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward", "");
  torch::jit::Stack stack{grad_output, input, weight,
                          output_mask[2] ? c10::IValue(bias_sizes) : c10::IValue(),
                          stride, padding, dilation, transposed, output_padding, groups,
                          c10::IValue(std::vector<bool>(output_mask.begin(), output_mask.end()))};
  if (run_as_host_kernel(op, &stack, 0, input.device(), "aten::convolution_backward_overrideable"))
    return {stack.at(0).toTensor(), stack.at(1).toTensor(), stack.at(2).toTensor()};
  auto [gi, gw, gb] = at::convolution_backward(grad_output.cpu(), input.cpu(), weight.cpu(),
                                               output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt,
                                               stride, padding, dilation, transposed, output_padding, groups,
                                               output_mask);
  auto back = [&](const Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(gi), back(gw), back(gb)};
}

}  // namespace ops

std::vector<std::pair<std::string, int64_t>> fallback_counts() { return counts.snapshot(); }

void reset_fallback_counts() { counts.clear(); }

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
}

// For a structured operator (exp, clamp, mse_loss, replication_pad2d, ...)
// PyTorch gives a backend without its kernels a generated functional and
// in-place wrapper (CompositeExplicitAutogradNonFunctional): the meta
// function allocates the result, then the out= variant fills it, here
// through the fallback. Where the CPU's own kernel lays out or sizes its
// result otherwise than the meta function (replication_pad2d keeps
// channels_last, mse_loss's out= kernel takes the unreduced shape first),
// xdal's results would differ from the CPU's in strides, or warn that an
// out= was resized although the caller passed none. The fallback runs the
// CPU's kernel of the operator called instead, as for every other operator.
void route_generated_wrappers_to_fallback() {
  static std::once_flag once;
  std::call_once(once, [] {
    static torch::Library lib(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("aten::", 0) != 0) continue;
      const auto op = dispatcher.findOp(name);
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1))
        continue;
      // Views and in-place views (as_strided_) change metadata only: their
      // wrapper is the kernel.
      const auto& returns = op->schema().returns();
      const bool view = std::any_of(returns.begin(), returns.end(), [](const c10::Argument& r) {
        return r.alias_info() != nullptr && !r.alias_info()->isWrite();
      });
      if (view || op->hasTag(at::Tag::inplace_view) || is_metadata_only(name.name)) continue;
      const std::string unqualified =
          name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
      lib.impl(unqualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&ops::cpu_fallback>());
    }
  });
}

}  // namespace torch_xdal
