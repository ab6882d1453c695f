"""Custom operators on xdal: the example C++ extension
(examples/torch_custom_op: TORCH_LIBRARY; xdal kernels launched on the
current stream, a built-in and one of its own in a host module; Meta and
Autograd kernels), built with pip against the installed PyTorch and xdal,
eagerly and under torch.compile; and Python operators from torch.library
with a kernel for "xdal"."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch._dynamo

from conftest import make

XDAL = torch.device("xdal")
ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "torch_custom_op"
# Built once and kept (ignored by git) until a source is newer.
TARGET = ROOT / "integrations" / "torch" / "build" / "xdal_example"


def build_example():
    built = list(TARGET.glob("xdal_example*.so"))
    newest_source = max(p.stat().st_mtime for p in EXAMPLE.iterdir() if p.is_file())
    if not built or built[0].stat().st_mtime < newest_source:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                               "--upgrade", "--target", str(TARGET), str(EXAMPLE)],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    sys.path.insert(0, str(TARGET))
    import xdal_example  # noqa: F401  registers torch.ops.xdal_example

    return torch.ops.xdal_example.scaled_add


@pytest.fixture(scope="module")
def scaled_add():
    return build_example()


def test_the_extensions_operator_runs_its_xdal_kernel_with_the_cpus_result(scaled_add):
    a, b = make((1000,), torch.float32), make((1000,), torch.float32, seed=1)
    torch.xdal.reset_fallback_counts()
    got = scaled_add(a.to(XDAL), b.to(XDAL), 0.5)
    assert got.device.type == "xdal"
    assert torch.equal(got.cpu(), scaled_add(a, b, 0.5))  # the CPU kernel: a + 0.5 * b
    assert torch.equal(got.cpu(), a + 0.5 * b)
    assert not torch.xdal.fallback_counts()  # its own kernel, not the fallback


def test_its_autograd_and_meta_kernels(scaled_add):
    a = make((4, 3), torch.float32).to(XDAL).requires_grad_()
    b = make((4, 3), torch.float32, seed=1).to(XDAL).requires_grad_()
    scaled_add(a, b, 3.0).sum().backward()
    assert torch.equal(a.grad.cpu(), torch.ones(4, 3))
    assert torch.equal(b.grad.cpu(), torch.full((4, 3), 3.0))
    m = scaled_add(torch.empty(2, 5, device="meta"), torch.empty(2, 5, device="meta"), 1.0)
    assert m.device.type == "meta" and m.shape == (2, 5)


def test_its_errors_are_raised_and_leave_xdal_usable(scaled_add):
    with pytest.raises(RuntimeError, match="shapes"):
        scaled_add(torch.ones(3, device=XDAL), torch.ones(4, device=XDAL), 1.0)
    with pytest.raises(RuntimeError, match="float32 only"):
        scaled_add(torch.ones(3, device=XDAL, dtype=torch.float64), torch.ones(3, device=XDAL), 1.0)
    assert torch.equal(scaled_add(torch.ones(3, device=XDAL), torch.ones(3, device=XDAL), 2.0).cpu(), torch.full((3,), 3.0))


def test_an_operator_with_a_kernel_of_its_own_in_a_host_module(scaled_add):
    a, b = make((5000,), torch.float32), make((5000,), torch.float32, seed=1)
    op = torch.ops.xdal_example.squared_difference
    if not torch.xdal.runs_host_kernels():
        with pytest.raises(RuntimeError, match="loads host modules"):
            op(a.to(XDAL), b.to(XDAL))
        assert torch.equal((a.to(XDAL) + 1).cpu(), a + 1)  # xdal still usable
        return
    got = op(a.to(XDAL), b.to(XDAL))
    assert torch.equal(got.cpu(), op(a, b))
    assert torch.equal(got.cpu(), (a - b) * (a - b))


def test_the_extensions_operator_under_torch_compile(scaled_add):
    torch._dynamo.reset()

    def f(x, y):
        return scaled_add(x.sin(), y, 2.0).relu()

    x, y = make((64,), torch.float32).to(XDAL), make((64,), torch.float32, seed=1).to(XDAL)
    torch.testing.assert_close(torch.compile(f)(x, y).cpu(), f(x, y).cpu())
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1
    torch._dynamo.reset()


@torch.library.custom_op("xdal_tests::clamp_square", mutates_args=())
def clamp_square(x: torch.Tensor, limit: float) -> torch.Tensor:
    return (x * x).clamp(max=limit)


XDAL_KERNEL_CALLS = []


@clamp_square.register_kernel("xdal")
def _(x, limit):
    XDAL_KERNEL_CALLS.append(x.shape)
    return torch.clamp(x * x, max=limit)


@clamp_square.register_fake
def _(x, limit):
    return torch.empty_like(x)


def test_python_operators_from_torch_library_run_their_xdal_kernel_eagerly_and_compiled():
    x = make((10,), torch.float32)
    XDAL_KERNEL_CALLS.clear()
    got = clamp_square(x.to(XDAL), 4.0)
    assert XDAL_KERNEL_CALLS == [torch.Size([10])]
    assert torch.equal(got.cpu(), clamp_square(x, 4.0))
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: clamp_square(t + 1, 4.0))
    torch.testing.assert_close(compiled(x.to(XDAL)).cpu(), clamp_square(x + 1, 4.0))
    torch._dynamo.reset()
