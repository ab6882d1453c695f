import os

import pytest
import torch

import torch_xdal  # noqa: F401  (also registered by `import torch` through the entry point)

# dtypes that both PyTorch and xdal have (xdal's f4/i4 have no unpacked PyTorch twin).
SHARED_DTYPES = [
    torch.float64, torch.float32, torch.float16, torch.bfloat16,
    torch.float8_e4m3fn, torch.float8_e5m2,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
]


def make(shape, dtype, seed=0):
    """A CPU tensor of `dtype` with varied values (no NaN/inf)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g, dtype=torch.float32) * 4).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 255, shape, generator=g, dtype=dtype)
    return torch.randint(-100, 100, shape, generator=g, dtype=dtype)


def same(a, b):
    """Bitwise-equal values (8-bit floats compared as bytes)."""
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b)


@pytest.fixture(autouse=True)
def _sync_after_test():
    yield
    for i in range(torch.xdal.device_count()):
        torch.xdal.synchronize(i)


def pytest_report_header(config):
    return (f"torch {torch.__version__}, xdal backend {torch.xdal.backend_name()}, "
            f"{torch.xdal.device_count()} devices, XDAL_FAKE_PROTECT={os.environ.get('XDAL_FAKE_PROTECT', '0')}")
