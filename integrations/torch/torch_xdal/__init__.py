"""torch_xdal: a PyTorch backend for xdal devices, built only on the xdal C ABI.

``import torch_xdal`` (or ``import torch`` alone, through the ``torch.backends``
entry point) makes ``torch.device("xdal")`` usable: tensors, copies, streams,
events, memory statistics, pinned memory and random generators map onto
libxdal.so calls. See docs/torch.md.
"""



def _autoload() -> None:
    """Entry point of the ``torch.backends`` group: called by ``import torch``.

    Defined before ``import torch`` below: when ``import torch_xdal`` comes
    first, that import runs torch's backend autoloading while this module is
    half-initialized; the registration then happens at the end of this file.
    """
    if "_register" in globals():
        _register()


import torch  # noqa: E402

from . import _C  # noqa: F401  loads libxdal and registers the PrivateUse1 backend
from . import _composite_kernels  # noqa: F401  registers kernels composed of ATen operators
from . import _distributed
from . import _sharing
from . import xdal as _device_module

__all__ = ["xdal"]

xdal = _device_module


def _register() -> None:
    if torch._C._get_privateuse1_backend_name() != "xdal":
        torch.utils.rename_privateuse1_backend("xdal")
    if getattr(torch, "xdal", None) is not _device_module:
        torch._register_device_module("xdal", _device_module)
    if not hasattr(torch.Tensor, "is_xdal"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    _sharing.install()
    _C._register_graph_impl()
    _distributed.register()


_register()
