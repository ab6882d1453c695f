"""torch.compile on xdal tensors: Inductor's C++ code generation for the
device, its kernels run as xdal host kernels.

Inductor calls ``torch.xdal._inductor_backend_init()`` (the vendor hook of
``init_backend_registration``) at the first compilation that meets an xdal
device: then, and not at ``import torch``, Dynamo and Inductor are loaded
and the device registered with both (importing them costs about 1.5 s).

Inductor generates C++ for xdal as it does for the CPU (``CppScheduling``);
the wrapper it generates loads each kernel through ``host_kernel`` below
instead of ``async_compile.cpp_pybinding``. ``host_kernel`` compiles the
kernel with an entry point of xdal's host-kernel shape (``xdal_status_t
(const xdal_kernel_context_t*, void* const* args)``) that unpacks the
arguments, and returns a launcher: each call enqueues the kernel with
``xdal_launch_kernel`` on the current stream of the tensors' device, in
stream order with every other xdal operation (and capturable into a graph),
over the device memory (xdal hands the kernel usable addresses, in protect
mode too).

On a backend that runs no host code (OpenCL), a launcher runs the kernel on
the CPU over host copies of its tensors' storages and copies the written
ones back, synchronously, after a warning given once: slow, never wrong.
A GPU-like backend would instead register a code generator of its own
(Triton, or C++ for its device compiler); see docs/torch.md.
"""

from __future__ import annotations

import ctypes
import warnings
from typing import Any, Sequence

import torch

from . import _C

# Argument kinds, as torch_xdal._C.launch_compiled_kernel reads them (CompiledArgKind).
_POINTER, _I64, _I32, _F64, _F32, _BOOL = range(6)
_SCALAR_KINDS = {
    "int64_t": _I64, "long": _I64, "int32_t": _I32, "int": _I32,
    "double": _F64, "float": _F32, "bool": _BOOL,
}
_CTYPES = {_I64: ctypes.c_int64, _I32: ctypes.c_int32, _F64: ctypes.c_double, _F32: ctypes.c_float,
           _BOOL: ctypes.c_bool}

_ENTRY = "xdal_inductor_entry"


def _kind(arg_type: str) -> int:
    t = arg_type.strip()
    if t.endswith("*"):
        return _POINTER
    base = t.replace("const ", "").strip()
    if base not in _SCALAR_KINDS:
        raise NotImplementedError(f"xdal: Inductor kernel argument of type {arg_type!r} is not supported")
    return _SCALAR_KINDS[base]


def _entry_source(arg_types: Sequence[str]) -> str:
    """The host-kernel entry point: args[i] points at argument i's bytes
    (a pointer argument's bytes are the address xdal translated). What the
    kernel throws (a failed TORCH_CHECK: an index out of bounds) is caught
    and its message written to `message`, since an exception must not
    unwind into xdal or ctypes (either aborts the process)."""
    params = []
    for i, t in enumerate(arg_types):
        if _kind(t) == _POINTER:
            params.append(f"static_cast<{t}>(*static_cast<void* const*>(args[{i}]))")
        else:
            base = t.replace("const ", "").strip()
            params.append(f"*static_cast<const {base}*>(args[{i}])")
    return (
        "\n#include <cstddef>\n#include <cstring>\n#include <exception>\n"
        f'extern "C" int {_ENTRY}(const void* /*context*/, void* const* args, char* message, std::size_t capacity) {{\n'
        '    const char* what = "an exception that is not a std::exception";\n'
        "    try {\n"
        f"        kernel({', '.join(params)});\n"
        "        return 0;\n"
        "    } catch (const std::exception& e) {\n"
        "        what = e.what();\n"
        "    } catch (...) {\n"
        "    }\n"
        "    if (capacity > 0) {\n"
        "        std::strncpy(message, what, capacity - 1);\n"
        "        message[capacity - 1] = 0;\n"
        "    }\n"
        "    return 1;\n"
        "}\n"
    )


_warned_copying = False


class HostKernel:
    """A compiled Inductor C++ kernel, called with the wrapper's arguments
    (tensors for its pointers, numbers for its scalars)."""

    def __init__(self, arg_types: Sequence[str], source: str) -> None:
        from torch._inductor.codecache import CppCodeCache

        self.kinds = [_kind(t) for t in arg_types]
        self.writes = [k == _POINTER and not t.strip().startswith("const") for k, t in zip(self.kinds, arg_types)]
        self.library = CppCodeCache.load(source + _entry_source(arg_types))
        self.entry = getattr(self.library, _ENTRY)
        self.entry.restype = ctypes.c_int
        self.entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        self.address = ctypes.cast(self.entry, ctypes.c_void_p).value
        self.on_device = _C.runs_host_kernels()

    def __call__(self, *args: Any) -> None:
        if len(args) != len(self.kinds):
            raise TypeError(f"xdal: Inductor kernel takes {len(self.kinds)} arguments, {len(args)} given")
        if self.on_device:
            _C.launch_compiled_kernel(self.address, args, self.kinds)
        else:
            self._run_over_copies(args)

    def _run_over_copies(self, args: Sequence[Any]) -> None:
        global _warned_copying
        if not _warned_copying:
            _warned_copying = True
            warnings.warn(
                f"xdal: the {_C.backend_name()!r} backend runs no host code: torch.compile's C++ kernels run on "
                "the CPU over copies of their tensors, synchronously (correct, but slower than eager xdal)",
                stacklevel=3,
            )
        # One host copy per storage: two arguments may be views of one
        # buffer, and what one writes the other must see.
        copies: dict[int, tuple[Any, Any, bool]] = {}
        values = []
        for arg, kind, writes in zip(args, self.kinds, self.writes):
            if kind != _POINTER:
                values.append(ctypes.pointer(_CTYPES[kind](arg)))
                continue
            storage = arg.untyped_storage()
            key = storage.data_ptr()
            if key not in copies:
                copies[key] = (storage, storage.cpu() if storage.device.type != "cpu" else storage, False)
            storage, host, written = copies[key]
            copies[key] = (storage, host, written or writes)
            address = ctypes.c_void_p(host.data_ptr() + arg.storage_offset() * arg.element_size())
            values.append(ctypes.pointer(address))
        array = (ctypes.c_void_p * len(values))(*[ctypes.cast(v, ctypes.c_void_p) for v in values])
        message = ctypes.create_string_buffer(1024)
        if self.entry(None, array, message, len(message)) != 0:
            raise RuntimeError(f"xdal: a kernel of torch.compile failed: {message.value.decode(errors='replace')}")
        for storage, host, written in copies.values():
            if written and host is not storage:
                storage.copy_(host)


def host_kernel(arg_types: Sequence[str], source: str) -> HostKernel:
    """What the generated wrapper calls in place of async_compile.cpp_pybinding."""
    return HostKernel(arg_types, source)


def _treat_xdal_as_cpp() -> None:
    """Inductor takes "generates C++" to mean "is the CPU" in two places,
    which xdal's kernels (C++ too) must answer as the CPU does:
    BaseSchedulerNode.is_cpu() guards the fusion steps that read the loop
    groups of SIMD (Triton) kernels, which C++ kernels do not have; and
    get_current_backend() names every other device's backend by
    config.cuda_backend ("triton"), which decides how C++ kernels type
    their masked loads. Both get the CPU's answer for xdal devices."""
    import torch._inductor.codegen.common as codegen_common
    import torch._inductor.utils as inductor_utils
    from torch._inductor.scheduler import BaseSchedulerNode
    from torch._inductor.virtualized import V

    if getattr(BaseSchedulerNode.is_cpu, "_xdal", False):
        return
    node_on_cpu = BaseSchedulerNode.is_cpu
    backend_of = inductor_utils.get_current_backend

    def is_cpu(self: BaseSchedulerNode) -> bool:
        device = self.get_device()
        return node_on_cpu(self) or (device is not None and device.type == "xdal")

    def get_current_backend(device_type: str | None = None) -> str:
        if not device_type:
            device_type = V.graph.get_current_device_or_throw().type
        return "cpp" if device_type == "xdal" else backend_of(device_type)

    is_cpu._xdal = True  # type: ignore[attr-defined]
    BaseSchedulerNode.is_cpu = is_cpu  # type: ignore[method-assign]
    inductor_utils.get_current_backend = get_current_backend
    codegen_common.get_current_backend = get_current_backend


def _pooling_through_aten() -> None:
    """Max pooling on xdal runs ATen's kernel (the host-kernel fallback,
    over the device memory), not Inductor's C++. Inductor's code for
    max_pool2d_with_indices (its low-memory decomposition, or its lowering)
    and for the backward take several times ATen's time on this CPU
    (measured with ``config.cpp.enable_kernel_profile``: 11.8 ms a conv net
    step against 4.9 forward, 4.6 against 0.7 backward), so a compiled conv
    net ran at 0.63x its eager step. Inductor has no per-device tables of
    decompositions or lowerings, so the entries of both ops are wrapped:
    for xdal tensors a decomposition declines (NotImplemented keeps the op)
    and the lowering is Inductor's own fallback to the ATen kernel; every
    other device gets Inductor's entries unchanged."""
    from torch._inductor import decomposition, lowering

    aten = torch.ops.aten
    pool = aten.max_pool2d_with_indices.default
    pool_backward = aten.max_pool2d_with_indices_backward.default

    def declined_on_xdal(decompose: Any) -> Any:
        def decompose_unless_xdal(first: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if first.device.type == "xdal":
                return NotImplemented
            return decompose(first, *args, **kwargs)

        decompose_unless_xdal._xdal = True  # type: ignore[attr-defined]
        return decompose_unless_xdal

    # fast_random_decomps() is the table Inductor uses by default: a copy
    # of `decompositions` made once, so both are changed.
    for table in (decomposition.decompositions, decomposition.fast_random_decomps()):
        for op in (pool, pool_backward):
            decompose = table.get(op)
            if decompose is not None and not getattr(decompose, "_xdal", False):
                table[op] = declined_on_xdal(decompose)

    for op in (pool, pool_backward):
        lower = lowering.lowerings.get(op)
        if lower is None or getattr(lower, "_xdal", False):
            continue
        fallback = lowering.fallback_handler(op, add_to_fallback_set=False)

        def lower_unless_xdal(first: Any, *args: Any, _lower: Any = lower, _fallback: Any = fallback,
                              **kwargs: Any) -> Any:
            device = first.get_device()
            if device is not None and device.type == "xdal":
                return _fallback(first, *args, **kwargs)
            return _lower(first, *args, **kwargs)

        lower_unless_xdal._xdal = True  # type: ignore[attr-defined]
        lowering.lowerings[op] = lower_unless_xdal


def register() -> None:
    """Registers xdal with Dynamo (its device interface) and Inductor (C++
    scheduling, the wrapper below, the device's op overrides)."""
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
    from torch._inductor.codegen.cpp import CppScheduling

    from ._inductor_codegen import XdalDeviceInterface, XdalDeviceOpOverrides, XdalWrapperCodegen

    _treat_xdal_as_cpp()
    _pooling_through_aten()
    register_interface_for_device("xdal", XdalDeviceInterface)
    register_device_op_overrides("xdal", XdalDeviceOpOverrides())
    register_backend_for_device("xdal", CppScheduling, XdalWrapperCodegen)
