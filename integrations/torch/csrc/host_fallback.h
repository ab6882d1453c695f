// What host_fallback.cpp and host_results.cpp share: how an operand or a
// result lies over device memory, and what a call's results look like.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace torch_xdal::host_fallback {

// An xdal tensor of the operator's arguments, or a result to fill: where
// it goes in the stack, and its layout over the device memory the kernel
// is handed.
struct Operand {
  size_t slot;           // the argument's (or the result's) place in the stack
  int64_t element;       // -1: the value itself; else its index in a list
  c10::ScalarType dtype;
  std::vector<int64_t> sizes, strides;
};

// What the meta kernel says of one call: the layout of each result to
// allocate (undefined: none; an in-place result is its argument), or that
// the operator must take the copying fallback.
struct MetaAnswer {
  bool usable = false;
  std::vector<std::optional<Operand>> results;
  std::optional<c10::OperatorHandle> out_op;  // see in_place_out_variant (host_results.cpp)
  // Empty out= arguments and the layout each takes (see size_empty_outs):
  // the answer is usable once they have it.
  std::vector<Operand> sized_outs;
};

// The answer for a call of `op` with `args` (the operator's arguments as
// the caller gave them), from the cache of answers by call signature.
std::shared_ptr<const MetaAnswer> meta_answer(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args);

// An out= tensor without elements is how composite operators ask for a
// result (abs, logsumexp: `abs_out(at::empty({0}), x)`), and resizing it
// warns of nothing: each such out of the call takes, on the device, the
// layout the meta kernel gives it (from the cache of answers), so that the
// CPU kernel has nothing to resize and the call may take the host path.
void size_empty_outs(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args);

// The ATen operator's schema type is a tensor's.
inline bool is_tensor_type(const c10::TypePtr& type) { return type->kind() == c10::TypeKind::TensorType; }

}  // namespace torch_xdal::host_fallback
