"""``torch.xdal``: the device module of the xdal backend.

Mirrors the parts of ``torch.cuda`` that generic PyTorch code looks for on a
PrivateUse1 device module (devices, synchronization, random state, memory,
streams, autocast types). Most calls are thin wrappers over torch.accelerator,
which reaches the backend's device guard and allocator.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import torch

from . import _C

Stream = torch.Stream
Event = torch.Event

_initialized = False


# ---------------------------------------------------------------- devices

def is_available() -> bool:
    return _C.device_count() > 0


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    return _C.current_device()


def _index(device: Any) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "xdal":
        raise ValueError(f"expected an xdal device, got {device}")
    return current_device() if device.index is None else device.index


def set_device(device: Any) -> None:
    idx = _index(device)
    if idx >= 0:
        _C.set_device(idx)


class device:
    """Context manager that makes ``device`` current (a no-op for None or a negative index)."""

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = _C.exchange_device(self.idx)

    def __exit__(self, *exc):
        if self.prev >= 0:
            _C.set_device(self.prev)
        return False


def get_device_name(device: Any = None) -> str:
    return _C.device_name(_index(device))


def get_device_properties(device: Any = None) -> dict:
    return _C.device_properties(_index(device))


def synchronize(device: Any = None) -> None:
    _C.synchronize(_index(device))


def init() -> None:
    _lazy_init()


def _lazy_init() -> None:
    global _initialized
    if not _initialized:
        _C._init()  # raises in a fork() child of a process that used xdal
        _initialized = True


def is_initialized() -> bool:
    return _initialized


def _is_in_bad_fork() -> bool:
    """True in a fork() child of a process that used xdal: xdal is refused there, as CUDA is."""
    return _C._is_in_bad_fork()


def _after_fork_in_child() -> None:
    global _initialized
    _initialized = False


os.register_at_fork(after_in_child=_after_fork_in_child)


def backend_name() -> str:
    """The xdal backend in use ("fake" on the simulated devices)."""
    return _C.backend_name()


# ---------------------------------------------------------------- streams

def current_stream(device: Any = None) -> torch.Stream:
    return torch.accelerator.current_stream(_index(device))


def default_stream(device: Any = None) -> torch.Stream:
    """The device's default stream: stream id 0, xdal's NULL stream."""
    idx = _index(device)
    current = torch.accelerator.current_stream(idx)
    return torch.Stream(stream_id=0, device_index=idx, device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(s: torch.Stream | None):
    if s is None:
        yield
        return
    prev = torch.accelerator.current_stream(s.device_index)
    torch.accelerator.set_stream(s)
    try:
        yield
    finally:
        torch.accelerator.set_stream(prev)


# ---------------------------------------------------------------- graphs

def graph_pool_handle() -> tuple[int, int]:
    """An id of a graph memory pool that several graphs may share: pass it
    as ``pool`` to their captures (``torch.cuda.graph_pool_handle``)."""
    return _C.graph_pool_handle()


def is_current_stream_capturing() -> bool:
    """Whether the current stream of the current device captures a graph."""
    return _C.is_current_stream_capturing()


class XdalGraph(torch._C._acceleratorGraph):
    """A graph of xdal work, captured once and replayed, with the interface
    of ``torch.cuda.CUDAGraph`` (``torch.accelerator.Graph`` is the same
    graph under PyTorch's device-generic interface).

    ``capture_begin(pool=None, capture_error_mode="global")`` captures the
    current stream (not the default one); ``capture_end()``; ``replay()``
    on the current stream; ``reset()``; ``pool()``;
    ``enable_debug_mode()`` (before the capture) then ``debug_dump(path)``
    writes xdal's Graphviz DOT file of the graph.
    """

    def __new__(cls, keep_graph: bool = False):
        return super().__new__(cls, keep_graph)

    def __init__(self, keep_graph: bool = False) -> None:
        super().__init__(keep_graph)

    def capture_begin(self, pool: tuple[int, int] | None = None, capture_error_mode: str = "global") -> None:
        super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)


class graph:
    """Captures the work of its body into ``xdal_graph``, as
    ``torch.cuda.graph`` does: on ``stream`` (by default a side stream of
    the device kept for captures), with the memory pool ``pool`` (a
    ``graph_pool_handle()`` or another graph's ``pool()``) and
    ``capture_error_mode`` ("global", "thread_local" or "relaxed")."""

    _default_capture_streams: dict[int, torch.Stream] = {}

    def __init__(
        self,
        xdal_graph: XdalGraph | torch.accelerator.Graph,
        pool: tuple[int, int] | None = None,
        stream: torch.Stream | None = None,
        capture_error_mode: str = "global",
    ) -> None:
        if stream is None:
            idx = current_device()
            stream = self._default_capture_streams.get(idx)
            if stream is None:
                stream = torch.Stream(device=torch.device("xdal", idx))
                self._default_capture_streams[idx] = stream
        self.xdal_graph = xdal_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_ctx = None

    def __enter__(self) -> None:
        synchronize()
        empty_cache()
        self._stream_ctx = stream(self.capture_stream)
        self._stream_ctx.__enter__()
        torch._C._acceleratorGraph.capture_begin(
            self.xdal_graph, pool=self.pool, capture_error_mode=self.capture_error_mode
        )

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.xdal_graph.capture_end()
        except Exception:
            # The body's own error says more than the broken capture's.
            if exc is None:
                raise
        finally:
            self._stream_ctx.__exit__(exc_type, exc, tb)


# ---------------------------------------------------------------- torch.compile

def _inductor_backend_init() -> None:
    """Inductor's hook for an out-of-tree device, called at the first
    compilation for it: registers xdal with Dynamo and Inductor
    (torch_xdal/_inductor.py)."""
    from . import _inductor

    _inductor.register()


# ---------------------------------------------------------------- random

def _gen(device: Any = None) -> torch.Generator:
    return _C.default_generator(_index(device))


def default_generator(device: Any = None) -> torch.Generator:
    return _gen(device)


def manual_seed(seed: int) -> None:
    _gen().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _gen(i).manual_seed(int(seed))


def seed() -> None:
    _gen().seed()


def seed_all() -> None:
    s = _gen(0).seed()
    for i in range(1, device_count()):
        _gen(i).manual_seed(s)


def initial_seed() -> int:
    return _gen().initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    return _gen(device).get_state()


def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
    _gen(device).set_state(state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(states) -> None:
    for i, s in enumerate(states):
        set_rng_state(s, i)


# ---------------------------------------------------------------- memory

def memory_allocated(device: Any = None) -> int:
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device: Any = None) -> int:
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device: Any = None) -> int:
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device: Any = None) -> int:
    return torch.accelerator.max_memory_reserved(_index(device))


def memory_stats(device: Any = None):
    return torch.accelerator.memory_stats(_index(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    torch.accelerator.reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    torch.accelerator.empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    return torch.accelerator.get_memory_info(_index(device))


def xdal_mem_stats(device: Any = None) -> dict:
    """xdal's own allocator statistics of the device (xdal_mem_get_stats)."""
    return _C.mem_stats(_index(device))


# ---------------------------------------------------------------- autocast

def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_bf16_supported() -> bool:
    return True


# ---------------------------------------------------------------- introspection

def fallback_counts() -> dict:
    """How many times each operator ran through the CPU fallback (either
    way: as a host kernel or on copies)."""
    return _C.fallback_counts()


def host_fallback_counts() -> dict:
    """How many of those ran their CPU kernel as a host kernel over the
    device memory, in stream order, without copies (backends that run host
    code; docs/torch.md says which operators qualify)."""
    return _C.host_fallback_counts()


def reset_fallback_counts() -> None:
    """Clears both counts."""
    _C.reset_fallback_counts()


def host_kernel_launches() -> int:
    """How many host kernels (xdal_function_from_host) the extension has
    launched: the conversions a backend that runs no host code leaves to
    the CPU."""
    return _C.host_kernel_launches()


def runs_host_kernels() -> bool:
    """Whether the backend runs host kernels (the fake backend does; a
    GPU-like backend such as OpenCL's does not, and the conversions that
    need one go through the CPU)."""
    return _C.runs_host_kernels()


# ---------------------------------------------------------------- typed storages

class _XdalLegacyStorage(torch.storage._LegacyStorage):
    """Base of torch.xdal.FloatStorage and its siblings, the typed storage
    classes that ``tensor.storage().type()`` names, as torch.cuda has them.
    Their module is ``torch.xdal``: PyTorch reads the device from it."""

    @classmethod
    def from_buffer(cls, *args, **kwargs):
        raise RuntimeError("from_buffer: Not available for xdal storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: Not available for xdal storage")

    @classmethod
    def _new_shared_filename(cls, manager, obj, size, *, device=None, dtype=None):
        raise RuntimeError("_new_shared_filename: Not available for xdal storage")


def _legacy_storage_class(name: str, dtype: torch.dtype) -> type:
    def _dtype(cls):
        return dtype

    return type(name, (_XdalLegacyStorage,), {
        "__module__": "torch.xdal",
        "__qualname__": name,
        "_dtype": torch._utils.classproperty(_dtype),
        "dtype": torch._utils.classproperty(_dtype),
    })


for _dtype, _name in torch.storage._dtype_to_storage_type_map().items():
    _cls = _legacy_storage_class(_name, _dtype)
    globals()[_name] = _cls
    torch._storage_classes.add(_cls)
del _dtype, _name, _cls
