// What the results of a host-kernel fallback (host_fallback.cpp) look
// like, asked once per call signature: their sizes and dtype from the
// operator's meta kernel, their strides from the CPU kernel itself, and
// whether an out= variant can write them in place.
#include "host_fallback.h"
#include "xdal_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include <charconv>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_xdal::host_fallback {
namespace {

using at::Tensor;

std::vector<int64_t> vec(c10::IntArrayRef a) { return a.vec(); }

// Meta answers by call signature (operator, operands' layouts, the other
// arguments' values): a training step asks the same again and again, some
// meta kernels are Python functions, slower than the CPU kernel they
// describe, and the CPU's layouts take a run of the CPU kernel. A call
// whose meta kernel warned is not kept, so that its warnings come every
// time, as the CPU's would.
std::mutex meta_mutex;
std::unordered_map<std::string, std::shared_ptr<const MetaAnswer>> meta_answers;
constexpr size_t kMaxMetaAnswers = 4096;

// Appends what decides the meta kernel's answer about `v` to `key`; false
// for a value it cannot describe (the answer is then not kept).
bool describe(const c10::IValue& v, std::string& key) {
  // Numbers go straight into the key: the key is built at every call of
  // the host path, and temporary strings were most of its cost.
  auto number = [&](auto x, char after) {
    char digits[24];
    const auto end = std::to_chars(std::begin(digits), std::end(digits), x).ptr;
    key.append(digits, end);
    key += after;
  };
  auto ints = [&](c10::IntArrayRef a) {
    for (int64_t x : a) number(x, ',');
    key += ';';
  };
  auto tensor = [&](const Tensor& t) {
    if (!t.defined()) {
      key += "u;";
      return;
    }
    key += 't';
    number(static_cast<int>(t.scalar_type()), is_xdal(t) ? 'x' : 'c');
    ints(t.sizes());
    ints(t.strides());
    number(t.storage_offset(), ';');
  };
  if (v.isTensor()) {
    tensor(v.toTensor());
  } else if (v.isTensorList()) {
    key += "[";
    for (const Tensor& t : v.toTensorList().vec()) tensor(t);
    key += "]";
  } else if (v.isOptionalTensorList()) {
    key += "[";
    for (const auto& t : v.toOptionalTensorList().vec()) t ? tensor(*t) : void(key += "n;");
    key += "]";
  } else if (v.isNone()) {
    key += "n;";
  } else if (v.isInt() || v.isBool()) {
    key += 'i';
    number(v.isInt() ? v.toInt() : int64_t(v.toBool()), ';');
  } else if (v.isDouble()) {
    const double d = v.toDouble();
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    key += 'd';
    number(bits, ';');
  } else if (v.isIntList()) {
    key += "l";
    ints(v.toIntList().vec());
  } else if (v.isBoolList()) {
    key += "b";
    for (bool b : v.toBoolList()) key += b ? "1" : "0";
    key += ";";
  } else if (v.isString()) {
    key += "s" + v.toStringRef() + ";";
  } else if (v.isDevice()) {
    key += "D" + v.toDevice().str() + ";";
  } else {
    return false;
  }
  return true;
}

// The written arguments (in place, out=) of a stack and their layouts when
// noted: the meta kernel and the CPU kernel must leave each as it was, as
// a kernel writing over device memory cannot reallocate or relay it
// (mse_loss's out= kernel resizes its out first).
class WrittenLayouts {
 public:
  WrittenLayouts(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& stack) {
    for (size_t i = 0; i < schema.arguments().size() && i < stack.size(); ++i) {
      const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
      if (!alias || !alias->isWrite()) continue;
      if (stack[i].isTensor()) note(stack[i].toTensor());
      if (stack[i].isTensorList())
        for (const Tensor& t : stack[i].toTensorList().vec()) note(t);
    }
  }

  bool unchanged() const {
    for (const Entry& e : entries_)
      if (e.tensor.storage().data_ptr().get() != e.data || !e.tensor.sizes().equals(e.sizes) ||
          !e.tensor.strides().equals(e.strides) || e.tensor.storage_offset() != e.offset)
        return false;
    return true;
  }

 private:
  struct Entry {
    Tensor tensor;
    const void* data;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
  };

  void note(const Tensor& t) {
    if (!t.defined()) return;
    entries_.push_back({t, t.storage().data_ptr().get(), vec(t.sizes()), vec(t.strides()), t.storage_offset()});
  }

  std::vector<Entry> entries_;
};

// The meta twin of an xdal tensor: the same layout over a meta storage of
// the same size. Other values as they are.
c10::IValue meta_twin(const c10::IValue& v) {
  auto twin = [](const Tensor& t) -> Tensor {
    if (!t.defined() || !is_xdal(t)) return t;
    const int64_t storage_elements =
        static_cast<int64_t>(t.storage().nbytes() / static_cast<size_t>(t.element_size()));
    return at::empty({storage_elements}, t.options().device(at::kMeta))
        .as_strided(t.sizes(), t.strides(), t.storage_offset());
  };
  if (v.isTensor()) return twin(v.toTensor());
  if (v.isTensorList()) {
    c10::List<Tensor> list;
    for (const Tensor& t : v.toTensorList().vec()) list.push_back(twin(t));
    return list;
  }
  if (v.isOptionalTensorList()) {
    c10::List<std::optional<Tensor>> list;
    for (const auto& t : v.toOptionalTensorList().vec()) list.push_back(t ? std::optional(twin(*t)) : t);
    return list;
  }
  return v;
}

// Some CPU kernels lay their results out otherwise than the meta kernel
// (replication_pad2d keeps channels_last), and the results must look as
// the CPU's do. So, once per call signature, the CPU kernel runs on the
// calling thread over uninitialised host tensors of the operands' layouts
// (shapes here never depend on values: the meta kernel answered without
// them), and `answer` takes its results' strides where they are dense.
// False where the CPU kernel refuses or disagrees with the meta kernel on
// sizes or dtypes.
// `args` with every xdal tensor replaced by a host tensor of its layout,
// holding the same deterministic values every time (floating point ones
// varied, in [0.25, 1.25): the out= variant's results are compared with
// the functional kernel's on them; others 0).
std::vector<c10::IValue> host_dummies(const std::vector<c10::IValue>& args) {
  auto dummy = [](const Tensor& t) -> Tensor {
    if (!t.defined() || !is_xdal(t)) return t;
    Tensor d = at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
    // Filled through its storage: an expanded layout has elements that
    // share memory, which copy_ refuses to write.
    const int64_t n = static_cast<int64_t>(d.storage().nbytes() / static_cast<size_t>(d.element_size()));
    if (n > 0) {
      Tensor flat = at::empty({0}, d.options());
      flat.set_(d.storage(), 0, {n}, {1});
      if (at::isFloatingType(d.scalar_type()))
        flat.copy_(at::arange(n, d.options()).mul_(0.377).remainder_(1.0).add_(0.25));
      else
        flat.zero_();  // integers are indices here (of known range): 0 is in range
    }
    return d;
  };
  std::vector<c10::IValue> stack;
  stack.reserve(args.size());
  for (const c10::IValue& v : args) {
    if (v.isTensor()) {
      stack.emplace_back(dummy(v.toTensor()));
    } else if (v.isTensorList()) {
      c10::List<Tensor> list;
      for (const Tensor& t : v.toTensorList().vec()) list.push_back(dummy(t));
      stack.emplace_back(list);
    } else if (v.isOptionalTensorList()) {
      c10::List<std::optional<Tensor>> list;
      for (const auto& t : v.toOptionalTensorList().vec()) list.push_back(t ? std::optional(dummy(*t)) : t);
      stack.emplace_back(list);
    } else {
      stack.push_back(v);
    }
  }
  return stack;
}

// Runs `op`'s CPU kernel on `stack` on the calling thread, its warnings
// dropped; false if it raised.
bool run_cpu_quietly(const c10::OperatorHandle& op, std::vector<c10::IValue>& stack) {
  struct Drop : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  } drop;
  try {
    c10::WarningUtils::WarningHandlerGuard guard(&drop);
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &stack);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

// The out= variant of a functional operator whose every result `answer`
// allocates, if it takes the same arguments and then one out= tensor per
// result, and writes them in place: checked by running it here on
// `args`' dummies into results of the answer's layouts, which must keep
// their memory and layout (mse_loss's out= kernel resizes its out first,
// which memory over the device's could not do) and receive what the
// functional kernel gave on the same dummies, `functional` (an out=
// kernel can be wrong where the functional one is right: torch 2.15's
// native_batch_norm.out, on a non-contiguous input).
std::optional<c10::OperatorHandle> in_place_out_variant(const c10::OperatorHandle& op,
                                                        const std::vector<c10::IValue>& args,
                                                        const MetaAnswer& answer,
                                                        const std::vector<c10::IValue>& functional) {
  const c10::FunctionSchema& schema = op.schema();
  for (const auto& result : answer.results)
    if (!result) return std::nullopt;
  const std::string overload = schema.overload_name();
  for (const std::string& name : {overload.empty() ? std::string("out") : overload + "_out", std::string("out")}) {
    const auto out_op = c10::Dispatcher::singleton().findOp({schema.name(), name});
    if (!out_op) continue;
    const auto& out_args = out_op->schema().arguments();
    if (out_args.size() != args.size() + answer.results.size()) continue;
    bool same = true;
    for (size_t i = 0; i < out_args.size() && same; ++i) {
      if (i < args.size()) {
        same = out_args[i].name() == schema.arguments()[i].name() &&
               out_args[i].type()->str() == schema.arguments()[i].type()->str();
      } else {
        same = out_args[i].kwarg_only() && out_args[i].alias_info() && out_args[i].alias_info()->isWrite() &&
               is_tensor_type(out_args[i].type());
      }
    }
    if (!same) continue;
    std::vector<c10::IValue> stack = host_dummies(args);
    std::vector<Tensor> outs;
    for (const auto& result : answer.results) {
      outs.push_back(at::empty_strided(result->sizes, result->strides,
                                       at::TensorOptions().dtype(result->dtype).device(at::kCPU)));
      stack.emplace_back(outs.back());
    }
    std::vector<std::pair<const void*, std::vector<int64_t>>> before;
    for (const Tensor& t : outs) before.emplace_back(t.data_ptr(), vec(t.strides()));
    if (!run_cpu_quietly(*out_op, stack)) return std::nullopt;
    for (size_t r = 0; r < outs.size(); ++r) {
      if (outs[r].data_ptr() != before[r].first || !outs[r].strides().equals(before[r].second) ||
          !outs[r].sizes().equals(answer.results[r]->sizes))
        return std::nullopt;
      const Tensor& expected = functional.at(r).toTensor();
      if (outs[r].scalar_type() != expected.scalar_type() ||
          !at::allclose(outs[r], expected, /*rtol=*/0, /*atol=*/0, /*equal_nan=*/true))
        return std::nullopt;
    }
    return out_op;
  }
  return std::nullopt;
}

bool take_cpu_layouts(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, MetaAnswer& answer) {
  std::vector<c10::IValue> stack = host_dummies(args);
  const WrittenLayouts written(op.schema(), stack);
  if (!run_cpu_quietly(op, stack) || !written.unchanged()) return false;
  if (stack.size() != answer.results.size()) return false;
  for (size_t r = 0; r < stack.size(); ++r) {
    if (!answer.results[r]) continue;
    Operand& result = *answer.results[r];
    if (!stack[r].isTensor()) return false;
    const Tensor& cpu = stack[r].toTensor();
    if (!cpu.defined() || !cpu.sizes().equals(result.sizes) || cpu.scalar_type() != result.dtype) return false;
    if (cpu.is_non_overlapping_and_dense()) result.strides = vec(cpu.strides());
  }
  answer.out_op = in_place_out_variant(op, args, answer, stack);
  return true;
}

// The out= tensors of a call as the meta kernel lays them out when given
// empty ones, whose resizing warns of nothing (asking with the real outs
// would warn that they were resized: a meta kernel written in Python warns
// through Python's warnings module, which no C++ handler sees, and the
// copying fallback's CPU kernel then warned a second time). The real out's
// slot, the real out, its meta twin after the call; none where the meta
// kernel refuses.
struct MetaOut {
  size_t slot;
  Tensor out, meta;
};

std::optional<std::vector<MetaOut>> meta_outs(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  const auto& schema_args = op.schema().arguments();
  std::vector<c10::IValue> stack;
  std::vector<MetaOut> outs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < schema_args.size() && schema_args[i].is_out() && args[i].isTensor() && args[i].toTensor().defined()) {
      const Tensor& out = args[i].toTensor();
      outs.push_back({i, out, at::empty({0}, out.options().device(at::kMeta))});
      stack.emplace_back(outs.back().meta);
    } else {
      stack.push_back(meta_twin(args[i]));
    }
  }
  if (outs.empty()) return outs;
  struct Drop : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  } drop;
  try {
    c10::WarningUtils::WarningHandlerGuard guard(&drop);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &stack);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return outs;
}

// The strides the CPU kernel gives the empty outs it resizes, where the
// meta kernel's differ: an out= resized by a TensorIterator kernel takes
// its inputs' layout (abs(channels_last, out=empty) is channels_last), one
// resized by a meta kernel written in Python is contiguous. Taken, as
// `take_cpu_layouts` takes the results', from a run over host dummies;
// left as the meta kernel has them where the CPU kernel refuses or sizes
// them otherwise.
void take_cpu_out_layouts(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                          std::vector<Operand>& sized_outs) {
  std::vector<c10::IValue> stack = host_dummies(args);
  std::vector<Tensor> dummies;
  for (const Operand& o : sized_outs) dummies.push_back(stack[o.slot].toTensor());
  if (!run_cpu_quietly(op, stack)) return;
  for (size_t i = 0; i < sized_outs.size(); ++i) {
    const Tensor& cpu = dummies[i];
    if (cpu.sizes().equals(sized_outs[i].sizes) && cpu.is_non_overlapping_and_dense())
      sized_outs[i].strides = vec(cpu.strides());
  }
}

// False where the operator would resize one of its out= tensors, which
// the host path cannot do (memory over the device's is not reallocated by
// a CPU kernel), or the meta kernel refuses. Empty outs that would be
// resized are listed in `answer.sized_outs` instead, with the CPU's
// layout (the answer stays unusable until they are sized).
bool outs_keep_their_sizes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, MetaAnswer& answer) {
  const auto outs = meta_outs(op, args);
  if (!outs) return false;
  for (const MetaOut& o : *outs) {
    if (o.meta.sizes().equals(o.out.sizes())) continue;
    if (o.out.numel() != 0 || !o.meta.is_non_overlapping_and_dense()) return false;
    answer.sized_outs.push_back(Operand{o.slot, -1, o.meta.scalar_type(), vec(o.meta.sizes()), vec(o.meta.strides())});
  }
  if (!answer.sized_outs.empty()) take_cpu_out_layouts(op, args, answer.sized_outs);
  return answer.sized_outs.empty();
}

// Runs the meta kernel on twins of `args`. Any failure there (no meta
// kernel, or a refusal) leaves the operator to the copying fallback, which
// raises the CPU's own error; the meta kernel's warnings go to `warnings`.
MetaAnswer ask_meta(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                    std::vector<c10::Warning>& warnings) {
  MetaAnswer answer;
  if (!outs_keep_their_sizes(op, args, answer)) return answer;
  const c10::FunctionSchema& schema = op.schema();
  struct Collect : c10::WarningHandler {
    std::vector<c10::Warning>* warnings = nullptr;
    void process(const c10::Warning& w) override { warnings->push_back(w); }
  } collect;
  collect.warnings = &warnings;
  std::vector<c10::IValue> stack;
  stack.reserve(args.size());
  for (const c10::IValue& v : args) stack.push_back(meta_twin(v));
  const WrittenLayouts written(schema, stack);
  try {
    c10::WarningUtils::WarningHandlerGuard guard(&collect);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &stack);
  } catch (const std::exception&) {
    return answer;
  }
  if (!written.unchanged()) return answer;
  const auto& returns = schema.returns();
  if (stack.size() != returns.size()) return answer;
  answer.results.resize(returns.size());
  for (size_t r = 0; r < returns.size(); ++r) {
    if (returns[r].alias_info()) continue;  // an in-place result: the argument itself
    const Tensor& meta = stack[r].toTensor();
    if (!meta.defined()) continue;  // not asked for (convolution_backward's output_mask)
    if (meta.layout() != at::kStrided || !meta.is_meta()) return answer;
    answer.results[r] = Operand{r, -1, meta.scalar_type(), vec(meta.sizes()), vec(meta.strides())};
  }
  answer.usable = take_cpu_layouts(op, args, answer);
  return answer;
}

}  // namespace

void size_empty_outs(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  const auto& schema_args = op.schema().arguments();
  bool any_empty = false;
  for (size_t i = 0; i < args.size() && i < schema_args.size(); ++i)
    any_empty = any_empty || (schema_args[i].is_out() && args[i].isTensor() && args[i].toTensor().defined() &&
                              args[i].toTensor().numel() == 0);
  if (!any_empty) return;
  for (const Operand& o : meta_answer(op, args)->sized_outs) {
    Tensor out = args[o.slot].toTensor();  // the caller's out itself (the same TensorImpl)
    out.resize_(o.sizes);
    if (!out.strides().equals(o.strides)) out.as_strided_(o.sizes, o.strides);
  }
}

std::shared_ptr<const MetaAnswer> meta_answer(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  std::string key;
  key.reserve(256);
  key.append(op.schema().name()).append(".").append(op.schema().overload_name()).append("|");
  bool keep = true;
  for (const c10::IValue& v : args) keep = keep && describe(v, key);
  if (keep) {
    std::lock_guard<std::mutex> g(meta_mutex);
    auto it = meta_answers.find(key);
    if (it != meta_answers.end()) return it->second;
  }
  std::vector<c10::Warning> warnings;
  auto answer = std::make_shared<const MetaAnswer>(ask_meta(op, args, warnings));
  if (answer->usable)
    for (const c10::Warning& w : warnings) c10::warn(w);
  if (keep && warnings.empty()) {
    std::lock_guard<std::mutex> g(meta_mutex);
    if (meta_answers.size() >= kMaxMetaAnswers) meta_answers.clear();
    meta_answers.emplace(std::move(key), answer);
  }
  return answer;
}

}  // namespace torch_xdal::host_fallback
