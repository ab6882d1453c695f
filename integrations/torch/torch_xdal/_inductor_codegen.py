"""The classes torch_xdal._inductor registers with Dynamo and Inductor.
Imported only from its register(): importing Dynamo and Inductor is slow."""

from __future__ import annotations

from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface
from torch._inductor.codegen.common import DeviceOpOverrides
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.virtualized import V

from . import _C


class XdalDeviceInterface(DeviceInterface):
    """What Dynamo and Inductor ask of the device at run time."""

    Stream = torch.Stream
    Event = torch.Event

    class device:
        def __new__(cls, device: torch.types.Device) -> Any:
            return torch.xdal.device(device)

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.xdal.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.xdal.current_device()

        @staticmethod
        def get_device_properties(device: torch.types.Device = None) -> Any:
            return torch.xdal.get_device_properties(device)

    @staticmethod
    def current_device() -> int:
        return torch.xdal.current_device()

    @staticmethod
    def set_device(device: torch.types.Device) -> None:
        torch.xdal.set_device(device)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return _C.exchange_device(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        return _C.exchange_device(device)

    @staticmethod
    def device_count() -> int:
        return torch.xdal.device_count()

    @staticmethod
    def is_available() -> bool:
        return torch.xdal.is_available()

    @staticmethod
    def stream(stream: torch.Stream) -> Any:
        return torch.xdal.stream(stream)

    @staticmethod
    def current_stream() -> torch.Stream:
        return torch.xdal.current_stream()

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.xdal.set_stream(stream)

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return 0  # host kernels launch on the current stream

    @staticmethod
    def synchronize(device: torch.types.Device = None) -> None:
        torch.xdal.synchronize(device)

    @staticmethod
    def get_compute_capability(device: torch.types.Device = None) -> str:
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return torch.xdal.is_bf16_supported()

    @staticmethod
    def memory_allocated(device: torch.types.Device = None) -> int:
        return torch.xdal.memory_allocated(device)

    @classmethod
    def get_multi_processor_count(cls, device: torch.types.Device = None) -> int:
        return int(torch.xdal.get_device_properties(device)["compute_units"])

    @staticmethod
    def is_triton_capable(device: torch.types.Device = None) -> bool:
        return False

    @staticmethod
    def is_gpu() -> bool:
        return False  # Inductor generates C++ for xdal, not Triton


class XdalDeviceOpOverrides(DeviceOpOverrides):
    """The device calls the generated Python wrapper makes."""

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"def {name}(_):\n    return 0\n"

    def set_device(self, device_idx: int) -> str:
        return f"torch.xdal.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.xdal.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.xdal.device({device_idx})"

    def cpp_kernel_type(self) -> str:
        return "void*"


class XdalWrapperCodegen(PythonWrapperCodegen):
    """CPU's Python wrapper, with each C++ kernel loaded by
    torch_xdal._inductor.host_kernel (a launcher of xdal host kernels) and
    called as the CPU's are."""

    @staticmethod
    def create(
        is_subgraph: bool,
        subgraph_name: str | None,
        parent_wrapper: PythonWrapperCodegen | None,
        partition_signatures: Any = None,
    ) -> PythonWrapperCodegen:
        if is_subgraph:
            return SubgraphPythonWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return XdalWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline("from torch_xdal._inductor import host_kernel as xdal_host_kernel")

    def define_kernel(
        self,
        kernel_name: str,
        kernel_body: str,
        metadata: str | None = None,
        gpu: bool = True,
        cpp_definition: str | None = None,
    ) -> None:
        kernel_body = kernel_body.replace("async_compile.cpp_pybinding(", "xdal_host_kernel(", 1)
        super().define_kernel(kernel_name, kernel_body, metadata, gpu, cpp_definition)

    def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, *, device: Any = None,
                                     **kwargs: Any) -> None:
        device = device or V.graph.get_current_device_or_throw()
        if device.type == "xdal":
            device = torch.device("cpu")  # a plain call: the launcher enqueues it
        super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)
