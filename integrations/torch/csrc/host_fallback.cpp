// The fallback without copies, on a backend that runs host code: the CPU
// kernel of an operator without an xdal kernel runs as a host kernel on
// the operands' stream, over the device memory itself (xdal hands a host
// kernel usable addresses of its pointer arguments, in protect mode too),
// asynchronously and in stream order, as a native kernel would. Results
// are allocated beforehand with the sizes and dtype that the operator's
// meta kernel gives (which also refuses, on the calling thread, what
// depends on shapes and types only: the copying fallback then raises the
// CPU's own error) and the strides the CPU kernel gives them.
//
// What the CPU kernel may refuse because of the values it reads (an index
// out of range, a matrix that is not invertible) would be reported only at
// the stream's next synchronization, and then stickily, as a GPU's device
// errors are; and what it refuses for a dtype it does not implement, which
// a meta kernel does not check, too. So operators go this way only where
// neither can happen: ATen's operators, xdal operands of float32,
// float64 or bool (masks; not where they index), none of integer type
// (indices, targets, counts) but indices whose values are known to be in
// range (bounded_indices; known_ranges.cpp: a copy from the host,
// unwritten since), no operator that checks values (linear algebra,
// binary_cross_entropy, histograms, assertions) or warns from its kernel
// (var, std), no random operator, tensor results or written arguments (an
// operator with neither runs for its checks), and out= arguments only
// where neither the meta kernel nor the CPU kernel resizes or relays them
// (memory over the device's cannot be reallocated by a CPU kernel; an
// empty out is sized beforehand). Everything else keeps the copying
// fallback (fallback.cpp), with its synchronous errors and warnings. Into
// a graph capture, the job is kept with the graph and runs at every replay.
#include "host_fallback.h"
#include "xdal_torch.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace torch_xdal {
namespace {

using at::Tensor;
using host_fallback::MetaAnswer;
using host_fallback::Operand;
using host_fallback::is_tensor_type;
using host_fallback::meta_answer;

// The most pointer arguments one launch takes (xdal's 4096 bytes of
// arguments, 8 per pointer, one for the job).
constexpr size_t kMaxOperands = 4096 / sizeof(void*) - 1;


// One launch's work, owned by the kernel once launched: the arguments with
// every xdal tensor left out (they are rebuilt over the addresses the
// kernel gets), and what to fill.
struct HostJob {
  explicit HostJob(const c10::OperatorHandle& handle) : op(handle) {}
  c10::OperatorHandle op;
  std::string name;
  std::vector<c10::IValue> args;
  std::vector<Operand> inputs;   // pointer arguments 1..n
  std::vector<Operand> results;  // pointer arguments n+1..: functional results
  // The operator's out= variant, where it writes the results in place
  // (else the results are copied from the CPU kernel's own).
  std::optional<c10::OperatorHandle> out_op;
  // Captured into a graph: owned by it and run at each replay (else owned
  // by the kernel, which runs once).
  bool in_graph = false;
};

OperatorCounts counts;
std::mutex failure_mutex;
std::string failure;  // the last host kernel that failed, and why

Tensor over(void* data, const Operand& o) {
  const auto options = at::TensorOptions().dtype(o.dtype).device(at::kCPU);
  // An empty tensor's address may be NULL, or the end of an allocation.
  int64_t numel = 1;
  for (int64_t s : o.sizes) numel *= s;
  if (numel == 0) return at::empty_strided(o.sizes, o.strides, options);
  return at::from_blob(data, o.sizes, o.strides, options);
}

void put(std::vector<c10::IValue>& stack, const Operand& o, Tensor t) {
  c10::IValue& v = stack[o.slot];
  if (o.element < 0) {
    v = std::move(t);
  } else if (v.isTensorList()) {
    v.toTensorList().set(static_cast<size_t>(o.element), std::move(t));
  } else {
    v.toOptionalTensorList().set(static_cast<size_t>(o.element), std::optional<Tensor>(std::move(t)));
  }
}

xdal_status_t host_fallback_kernel(const xdal_kernel_context_t*, void* const* args) {
  HostJob* job = *static_cast<HostJob* const*>(args[0]);
  const std::unique_ptr<HostJob> once(job->in_graph ? nullptr : job);
  try {
    // The CPU kernel, below autograd (its operands need no gradient), with
    // its warnings dropped: this thread has no Python to give them to, and
    // the meta kernel gave those of shapes and types on the caller's (and
    // operators whose kernels warn otherwise do not come here).
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    at::init_num_threads();  // the caller's intra-op thread count, not the worker's default
    HostScratchScope scratch;
    struct Quiet : c10::WarningHandler {
      void process(const c10::Warning&) override {}
    } quiet;
    c10::WarningUtils::WarningHandlerGuard warnings(&quiet);
    size_t arg = 1;
    for (const Operand& o : job->inputs) put(job->args, o, over(*static_cast<void* const*>(args[arg++]), o));
    std::vector<c10::IValue> stack = job->in_graph ? job->args : std::move(job->args);
    if (job->out_op) {
      for (const Operand& o : job->results) stack.emplace_back(over(*static_cast<void* const*>(args[arg++]), o));
      job->out_op->redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &stack);
      return XDAL_SUCCESS;
    }
    job->op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &stack);
    for (const Operand& o : job->results) {
      Tensor dst = over(*static_cast<void* const*>(args[arg++]), o);
      const Tensor& src = stack.at(o.slot).toTensor();
      TORCH_CHECK(src.sizes().equals(dst.sizes()) && src.scalar_type() == dst.scalar_type(),
                  "the CPU kernel's result (", src.sizes(), ", ", src.scalar_type(),
                  ") is not what the meta kernel announced (", dst.sizes(), ", ", dst.scalar_type(), ")");
      dst.copy_(src);
    }
    return XDAL_SUCCESS;
  } catch (const std::exception& e) {
    note_host_kernel_failure("the CPU kernel of " + job->name + " failed: " + e.what());
  } catch (...) {
    // Nothing may unwind into xdal (a foreign exception aborts the process).
    note_host_kernel_failure("the CPU kernel of " + job->name + " threw something that is not a std::exception");
  }
  return XDAL_ERROR_LAUNCH_FAILED;
}

xdal_function_t host_fallback_function() {
  static xdal_function_t f = [] {
    xdal_function_t fn = function_from_host(&host_fallback_kernel);
    if (fn) install_host_scratch_allocator();
    return fn;
  }();
  return f;
}

// Floating-point operators whose CPU kernels must run where the caller
// is: those that refuse inputs by their values (linear algebra: singular,
// not positive definite, not converging; binary_cross_entropy: outside
// [0, 1]; histograms: a range that is not finite; assertions), and those
// that warn from shapes their meta kernels do not look at (var and std of
// too few elements for the correction), since a host kernel drops its
// warnings.
bool needs_the_caller(const std::string& name) {
  if (name == "aten::linalg_vector_norm") return false;  // a norm refuses no values
  for (const char* prefix : {"aten::linalg_", "aten::_linalg_", "aten::cholesky", "aten::inverse", "aten::lu",
                             "aten::_lu", "aten::triangular_solve", "aten::lstsq", "aten::geqrf", "aten::ormqr",
                             "aten::orgqr", "aten::logdet", "aten::det", "aten::slogdet", "aten::binary_cross_entropy",
                             "aten::histc", "aten::histogram", "aten::_assert", "aten::var", "aten::std"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// Whether the operator allows the host-kernel path at all. Random
// operators (with a generator argument, or drawing from the CPU's default
// one, as native_dropout does) stay synchronous, in the order of the
// caller's draws.
// ATen's operators only: a custom operator's CPU kernel may be Python,
// which would need the GIL on the backend's worker while the caller holds
// it waiting for the stream.
bool allows(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  if (schema.name().rfind("aten::", 0) != 0) return false;
  if (needs_the_caller(schema.name()) || op.hasTag(at::Tag::nondeterministic_seeded)) return false;
  bool writes = !schema.returns().empty();
  for (const c10::Argument& a : schema.arguments()) {
    c10::TypePtr type = a.type();
    if (type->kind() == c10::TypeKind::OptionalType) type = type->castRaw<c10::OptionalType>()->getElementType();
    if (type->kind() == c10::TypeKind::GeneratorType) return false;
    writes = writes || (a.alias_info() && a.alias_info()->isWrite());
  }
  // An operator that neither returns nor writes anything runs for its
  // checks (or other side effects): those belong to the call.
  if (!writes) return false;
  for (const c10::Argument& r : schema.returns()) {
    if (!is_tensor_type(r.type())) return false;
    if (r.alias_info() && !r.alias_info()->isWrite()) return false;  // a view
  }
  return true;
}

// The elements of one pooled plane (or volume) of `input`, that max
// pooling's indices count in; 0 for other operators or a shape without.
int64_t pooled_elements(const std::string& name, const Tensor& input) {
  const int64_t dims = name.rfind("aten::max_pool2d_with_indices", 0) == 0   ? 2
                       : name.rfind("aten::max_pool3d_with_indices", 0) == 0 ? 3
                                                                              : 0;
  if (dims == 0 || input.dim() < dims) return 0;
  int64_t elements = 1;
  for (int64_t d = input.dim() - dims; d < input.dim(); ++d) elements *= input.size(d);
  return elements;
}

// Notes the range of results that their kernel bounds, whatever the
// values it reads: max pooling's indices lie in the input's plane, and
// its backward can then take them on the host path.
void note_bounded_results(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& args,
                          const std::vector<Tensor>& results) {
  const std::string& name = schema.name();
  if (name != "aten::max_pool2d_with_indices" && name != "aten::max_pool3d_with_indices") return;
  if (results.size() != 2 || !results[1].defined() || args.empty() || !args[0].isTensor()) return;
  const int64_t plane = pooled_elements(name, args[0].toTensor());
  if (plane > 0) note_range(results[1], 0, plane - 1);
}

// Operators of (self, dim, index, ...) whose indices pick positions of
// `self` along `dim`, none negative: index_select (what embedding calls),
// gather, and the scatter and index_* writes, functional or in place.
bool indexes_along_dim(const std::string& name) {
  for (const char* op : {"aten::index_select", "aten::gather", "aten::scatter", "aten::scatter_", "aten::scatter_add",
                         "aten::scatter_add_", "aten::scatter_reduce", "aten::scatter_reduce_", "aten::index_add",
                         "aten::index_add_", "aten::index_copy", "aten::index_copy_", "aten::index_fill",
                         "aten::index_fill_"})
    if (name == op) return true;
  return false;
}

// An integer operand the CPU kernel uses as indices, and the bound its
// values must stay under: the NLL losses' (cross_entropy's) class targets
// (the class count of `self`, its only dimension or its second), the
// index of index_select, gather, scatter and the index_* writes (`self`'s
// size along `dim`),
// the embedding backward's indices (`num_weights`), max pooling's indices
// in its backward (the input's plane). The CPU refuses an
// index out of range when it is called; on the host path that check runs
// on the calling thread from what known_ranges.cpp knows of the values, so
// that the operator need not wait for the stream to read them.
struct BoundedIndices {
  size_t slot;
  int64_t bound;
};

std::optional<BoundedIndices> bounded_indices(const c10::FunctionSchema& schema,
                                              const std::vector<c10::IValue>& args) {
  const std::string& name = schema.name();
  auto slot = [&](const char* wanted) -> std::optional<size_t> {
    const std::optional<int> i = schema.argumentIndexWithName(wanted);
    if (!i || static_cast<size_t>(*i) >= args.size()) return std::nullopt;
    return static_cast<size_t>(*i);
  };
  auto tensor = [&](std::optional<size_t> at) { return at && args[*at].isTensor() ? args[*at].toTensor() : Tensor(); };
  if (name == "aten::nll_loss_forward" || name == "aten::nll_loss_backward" || name == "aten::nll_loss2d_forward" ||
      name == "aten::nll_loss2d_backward") {
    const Tensor input = tensor(slot("self"));
    const std::optional<size_t> target = slot("target");
    if (!target || !input.defined() || input.dim() == 0) return std::nullopt;
    return BoundedIndices{*target, input.size(input.dim() == 1 ? 0 : 1)};
  }
  if (indexes_along_dim(name)) {
    const Tensor input = tensor(slot("self"));
    const std::optional<size_t> dim = slot("dim"), index = slot("index");
    if (!index || !dim || !input.defined() || !args[*dim].isInt()) return std::nullopt;
    const int64_t rank = std::max<int64_t>(input.dim(), 1);
    const int64_t d = args[*dim].toInt() < 0 ? args[*dim].toInt() + rank : args[*dim].toInt();
    if (d < 0 || d >= rank) return std::nullopt;  // the copying path raises the CPU's error
    return BoundedIndices{*index, input.dim() == 0 ? 1 : input.size(d)};
  }
  if (name == "aten::max_pool2d_with_indices_backward" || name == "aten::max_pool3d_with_indices_backward") {
    const Tensor input = tensor(slot("self"));
    const std::optional<size_t> indices = slot("indices");
    const int64_t plane = input.defined() ? pooled_elements(name, input) : 0;
    if (!indices || plane <= 0) return std::nullopt;
    return BoundedIndices{*indices, plane};
  }
  if (name == "aten::embedding_dense_backward") {
    const std::optional<size_t> weights = slot("num_weights"), indices = slot("indices");
    if (!indices || !weights || !args[*weights].isInt()) return std::nullopt;
    return BoundedIndices{*indices, args[*weights].toInt()};
  }
  return std::nullopt;
}

// Boolean operands (masks) hold no indices, save in the operators that
// index with them, whose CPU kernels check values against the mask's
// count (`x[mask] = values`).
bool indexes_by_mask(const std::string& name) {
  for (const char* prefix : {"aten::index", "aten::_index_put", "aten::masked_scatter", "aten::_unsafe_masked_index"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

bool run_as_host_kernel(const c10::OperatorHandle& op, std::vector<c10::IValue>* stack, size_t base,
                        c10::Device device, const char* counted_as) {
  if (device.index() < 0 || !host_fallback_function()) return false;
  if (!allows(op)) return false;
  const c10::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  const std::vector<c10::IValue> originals(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  host_fallback::size_empty_outs(op, originals);  // the same tensors as the stack's

  // The operands: xdal tensors of float32/float64 (bool where they do not
  // index; integers as indices of known range), strided, on `device`; CPU
  // tensors only as 0-dimensional scalars read, never written (copied, so
  // that the caller may change them before the kernel runs).
  auto job = std::make_unique<HostJob>(op);
  job->args = originals;
  std::vector<Tensor> device_inputs;
  job->inputs.reserve(n);
  device_inputs.reserve(n);
  bool eligible = true;
  auto operand_type_ok = [&](const Tensor& t, size_t slot) {
    if (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble) return true;
    if (t.scalar_type() == at::kBool) return !indexes_by_mask(schema.name());
    const std::optional<BoundedIndices> indices = bounded_indices(schema, originals);  // integers only
    return indices && slot == indices->slot && known_within(t, 0, indices->bound);
  };
  auto take = [&](const Tensor& t, size_t slot, int64_t element, bool written) -> Tensor {
    if (!t.defined()) return t;
    if (t.layout() != at::kStrided) {
      eligible = false;
    } else if (!is_xdal(t)) {
      if (t.dim() != 0 || t.device().type() != at::kCPU || written) eligible = false;
      // A Python number stays one (it does not take part in type
      // promotion as a 0-dim tensor would: xlogy(float_tensor, 5)).
      Tensor copy = t.clone();
      if (t.unsafeGetTensorImpl()->is_wrapped_number()) copy.unsafeGetTensorImpl()->set_wrapped_number(true);
      return copy;
    } else if (t.device() != device || !operand_type_ok(t, slot) || t.is_conj() || t.is_neg()) {
      eligible = false;
    } else {
      job->inputs.push_back({slot, element, t.scalar_type(), t.sizes().vec(), t.strides().vec()});
      device_inputs.push_back(t);
    }
    return Tensor();  // put back over the device memory by the kernel
  };
  for (size_t i = 0; i < n && eligible; ++i) {
    c10::IValue& v = job->args[i];
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    const bool written = alias && alias->isWrite();
    if (v.isTensor()) {
      v = take(v.toTensor(), i, -1, written);
    } else if (v.isTensorList()) {
      const std::vector<Tensor> list = v.toTensorList().vec();
      c10::List<Tensor> host_list;
      for (size_t j = 0; j < list.size(); ++j) host_list.push_back(take(list[j], i, static_cast<int64_t>(j), written));
      v = host_list;
    } else if (v.isOptionalTensorList()) {
      const auto list = v.toOptionalTensorList().vec();
      c10::List<std::optional<Tensor>> host_list;
      for (size_t j = 0; j < list.size(); ++j)
        host_list.push_back(list[j] ? std::optional(take(*list[j], i, static_cast<int64_t>(j), written)) : list[j]);
      v = host_list;
    }
  }
  if (!eligible || device_inputs.empty() || device_inputs.size() > kMaxOperands) return false;

  const c10::Stream stream = current_stream(device.index());
  uint64_t capture_id = 0;
  const xdal_capture_status_t capture = capture_status(stream, &capture_id);
  if (capture == XDAL_CAPTURE_STATUS_INVALIDATED) return false;  // the copying path reports it
  job->in_graph = capture == XDAL_CAPTURE_STATUS_ACTIVE;

  const std::shared_ptr<const MetaAnswer> meta = meta_answer(op, originals);
  if (!meta->usable) return false;
  std::vector<Tensor> outputs(meta->results.size());
  job->results.reserve(meta->results.size());
  for (const auto& result : meta->results) {
    // A result whose elements share memory (new_empty_strided with a zero
    // stride) cannot take the CPU kernel's result element by element.
    if (result && may_overlap_itself(result->sizes, result->strides)) return false;
    if (result) job->results.push_back(*result);
  }
  job->out_op = meta->out_op;
  if (device_inputs.size() + job->results.size() > kMaxOperands) return false;
  for (const Operand& o : job->results)  // empty_strided's kernel itself: not through the dispatcher
    outputs[o.slot] = ops::empty_strided(o.sizes, o.strides, o.dtype, std::nullopt, device, std::nullopt);

  std::vector<void*> pointers;
  pointers.reserve(device_inputs.size() + job->results.size());
  for (const Tensor& t : device_inputs) pointers.push_back(ptr_of(t));
  for (const Operand& o : job->results) pointers.push_back(ptr_of(outputs[o.slot]));
  job->name = schema.overload_name().empty() ? schema.name() : schema.name() + "." + schema.overload_name();
  const std::string name = counted_as ? counted_as : job->name;
  HostJob* raw = job.get();
  // A graph's job lives as long as the graph: none if the capture is not
  // one of torch_xdal's graphs.
  if (job->in_graph && !keep_for_capture(capture_id, std::shared_ptr<HostJob>(std::move(job)))) return false;
  std::vector<xdal_kernel_arg_t> args;
  args.reserve(1 + pointers.size());
  args.push_back({&raw, sizeof raw});
  for (void*& p : pointers) args.push_back({&p, sizeof p});
  const xdal_dim3_t one{1, 1, 1};
  TX_CHECK(xdal_launch_kernel(host_fallback_function(), one, one, 0, native_stream(stream), args.data(), args.size()));
  job.release();  // the kernel's now (or the graph's)
  note_bounded_results(schema, originals, outputs);

  // The results: in-place ones are their arguments, the others the tensors
  // the kernel fills.
  const auto& returns = schema.returns();
  stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  for (size_t r = 0; r < returns.size(); ++r) {
    const c10::AliasInfo* alias = returns[r].alias_info();
    if (!alias) {
      stack->emplace_back(outputs[r]);
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      const c10::AliasInfo* a = schema.arguments()[i].alias_info();
      if (a && a->isWrite() && a->beforeSets() == alias->beforeSets()) {
        stack->push_back(originals[i]);
        break;
      }
    }
  }
  counts.add(name);
  return true;
}

std::vector<std::pair<std::string, int64_t>> host_fallback_counts() { return counts.snapshot(); }

void reset_host_fallback_counts() { counts.clear(); }

std::string host_fallback_failure() {
  std::lock_guard<std::mutex> g(failure_mutex);
  return failure;
}

void note_host_kernel_failure(const std::string& why) {
  std::lock_guard<std::mutex> g(failure_mutex);
  failure = why;
}

}  // namespace torch_xdal
