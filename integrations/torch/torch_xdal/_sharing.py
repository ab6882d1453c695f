"""xdal tensors and torch.multiprocessing: refused, never a hang.

xdal has no inter-process handle for device memory (CUDA's cudaIpc*), so an
xdal tensor cannot be shared with another process. PyTorch's own reducer
would treat it as a CPU tensor and fail in ``_share_fd_`` -- inside the
queue's feeder thread for ``Queue.put``, where the error never reaches the
caller and the receiving process waits forever. These reducers refuse
instead: with a RuntimeError at the sender where pickling is synchronous
(``Pipe.send``, ``SimpleQueue.put``, process arguments), and, from a
``Queue``'s feeder thread, with an item whose unpickling raises the same
error in the receiver, so that its ``get()`` returns with the reason.
"""
import threading
from multiprocessing.reduction import ForkingPickler

import torch
import torch.multiprocessing  # noqa: F401  installs PyTorch's reducers first

MESSAGE = (
    "xdal tensors cannot be shared between processes: xdal has no inter-process "
    "handle for device memory. Send tensor.cpu() and move it to the xdal device "
    "in the receiving process."
)


def _refuse_in_receiver(message: str):
    raise RuntimeError(message)


def _refusal(what: str):
    message = f"{what}: {MESSAGE}"
    if threading.current_thread().name == "QueueFeederThread":
        return (_refuse_in_receiver, (message,))
    raise RuntimeError(message)


def _wrap(cls, describe):
    original = ForkingPickler._extra_reducers.get(cls)
    if original is None or getattr(original, "_xdal_wrapped", False):
        return

    def reduce(obj):
        if obj.device.type == "xdal":
            return _refusal(describe(obj))
        return original(obj)

    reduce._xdal_wrapped = True
    ForkingPickler.register(cls, reduce)


def install() -> None:
    """Wraps PyTorch's multiprocessing reducers of tensors and storages."""
    for cls in set(torch._tensor_classes) | {torch.Tensor, torch.nn.Parameter}:
        _wrap(cls, lambda t: f"cannot send a tensor on {t.device} to another process")
    _wrap(torch.UntypedStorage, lambda s: f"cannot send a storage on {s.device} to another process")
