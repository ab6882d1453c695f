"""torch.distributed on xdal tensors: the c10d backend "xdal".

A process group of this backend holds two c10d backends: Gloo for CPU
tensors, and for xdal tensors ``XdalStagingBackend``, which runs Gloo's
collectives on host copies of the tensors (xdal copies on the current
stream, waited for) and copies the results back. It is the default for the
xdal device type, so ``init_process_group()`` without a backend name (which
PyTorch resolves from the current accelerator, xdal wherever torch_xdal is
installed) serves CPU tensors as it always did, and xdal tensors too.

Gloo's transport carries it across machines (TCP; GLOO_SOCKET_IFNAME picks
the interface). A vendor with a collective library of its own (an NCCL-like
library reaching device memory directly) replaces the staging backend with
one that calls it on the current stream, and keeps Gloo for CPU tensors.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as C10dBackend

BACKEND_NAME = "xdal"

# The argument each collective writes: copied back after it (the others are
# only read). send and barrier write nothing.
_WRITES_FIRST_ARGUMENT = (
    "broadcast", "allreduce", "allreduce_coalesced", "reduce", "allgather", "all_gather_single",
    "allgather_coalesced", "all_gather_single_coalesced", "allgather_into_tensor_coalesced", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor_coalesced", "all_to_all_single", "alltoall",
    "recv",
)


class _Completed(dist._Work):
    """The work of a collective that has finished when it is returned."""

    def __init__(self, result: Any = None) -> None:
        super().__init__()
        self._result = result

    def wait(self, timeout: timedelta | None = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def get_future(self) -> torch.futures.Future:
        future: torch.futures.Future = torch.futures.Future()
        future.set_result(self._result)
        return future


def _stage(value: Any, staged: list) -> Any:
    """`value` with each xdal tensor replaced by a host copy (noted in
    `staged` as (xdal tensor, host copy))."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "xdal":
            return value
        host = value.detach().to("cpu")
        staged.append((value, host))
        return host
    if isinstance(value, (list, tuple)):
        return type(value)(_stage(v, staged) for v in value)
    return value


class XdalStagingBackend(C10dBackend):
    """xdal tensors' collectives, run by Gloo on host copies."""

    def __init__(self, gloo: C10dBackend, rank: int, size: int) -> None:
        super().__init__(rank, size)
        self._gloo = gloo

    def getBackendName(self) -> str:
        return BACKEND_NAME

    def shutdown(self) -> None:
        """destroy_process_group: lets Gloo go with the group, its threads
        joined while Python runs (held here until the interpreter's last
        garbage collection, a Gloo thread that drops the last reference to
        a tensor would need the GIL during finalization, and abort)."""
        self._gloo = None

    def abort(self) -> None:
        self._gloo = None

    def _run(self, name: str, *args: Any) -> dist._Work:
        staged: list = []
        host_args = [_stage(a, staged) for a in args[:1]]
        written = len(staged) if name in _WRITES_FIRST_ARGUMENT else 0  # the first argument's tensors
        host_args += [_stage(a, staged) for a in args[1:]]
        getattr(self._gloo, name)(*host_args).wait()
        for device_tensor, host in staged[:written]:
            device_tensor.copy_(host)
        return _Completed(args[0] if args else None)


def _forward(name: str):
    def collective(self: XdalStagingBackend, *args: Any) -> dist._Work:
        return self._run(name, *args)

    collective.__name__ = name
    collective.__doc__ = f"Gloo's {name} on host copies of the xdal tensors."
    return collective


for _name in _WRITES_FIRST_ARGUMENT + ("send", "barrier"):
    setattr(XdalStagingBackend, _name, _forward(_name))


def _create(opts: Any, backend_options: Any) -> dist.ProcessGroup:
    store, rank, size = opts.store, opts.group_rank, opts.group_size
    timeout = opts.timeout
    gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, size, timeout)
    staging = XdalStagingBackend(gloo, rank, size)
    pg = dist.ProcessGroup(store, rank, size)
    pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
    pg._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
    pg._register_backend(torch.device("xdal"), dist.ProcessGroup.BackendType.CUSTOM, staging)
    return pg


def register() -> None:
    """Registers the backend "xdal", the default for xdal devices (once)."""
    if not dist.is_available() or not dist.is_gloo_available():
        return
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["xdal", "cpu"])
