"""PyTorch's narrowest dtypes on xdal tensors: float4_e2m1fn_x2 (two
float4 values a byte), float8_e8m0fnu (a power-of-two scale) and the 1- to
7-bit integer types (one a byte). Creation, bit-exact round trips, views
and slices, and the conversions PyTorch defines for them, with the CPU's
results; conversions the CPU refuses are refused too."""
import pytest
import torch

XDAL = torch.device("xdal")
BITS = [getattr(torch, f"{s}int{n}") for s in ("", "u") for n in range(1, 8)]
NARROW = [torch.float4_e2m1fn_x2, torch.float8_e8m0fnu] + BITS


def random_bytes(n, seed=0):
    return torch.randint(0, 256, (n,), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_round_trips_views_and_slices_keep_every_bit(dtype):
    host = random_bytes(24).view(dtype)
    dev = host.to(XDAL)
    assert dev.dtype == dtype and dev.device.type == "xdal"
    assert torch.equal(dev.cpu().view(torch.uint8), host.view(torch.uint8))
    raw = host.view(torch.uint8)  # the CPU copies no strided 1-7 bit integers: expectations on bytes
    assert torch.equal(dev[3:17:2].view(torch.uint8).cpu(), raw[3:17:2])
    assert torch.equal(dev.view(torch.uint8).cpu(), raw)
    assert torch.equal(dev.reshape(4, 6).t().contiguous().view(torch.uint8).cpu(), raw.reshape(4, 6).t().contiguous())
    assert torch.equal(dev.clone().cpu().view(torch.uint8), host.view(torch.uint8))
    empty = torch.empty(5, dtype=dtype, device=XDAL)
    assert empty.dtype == dtype and empty.element_size() == 1 and empty.shape == (5,)


def test_float8_e8m0fnu_converts_as_the_cpu_does_both_ways():
    values = torch.tensor([0.5, 1.0, 2.0, 3.0, 0.75, 1e-30, 1e30, 2.0**-127, 2.0**127, float("nan"), float("inf")])
    expected = values.to(torch.float8_e8m0fnu)
    got = values.to(XDAL).to(torch.float8_e8m0fnu)
    assert torch.equal(got.cpu().view(torch.uint8), expected.view(torch.uint8))
    every = torch.arange(256, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    back = every.to(XDAL).to(torch.float32).cpu()
    assert torch.equal(back.view(torch.int32), every.to(torch.float32).view(torch.int32))


@pytest.mark.parametrize("dtype", [torch.float4_e2m1fn_x2] + BITS, ids=str)
def test_conversions_the_cpu_refuses_are_refused_alike(dtype):
    host = random_bytes(8).view(dtype)
    with pytest.raises((RuntimeError, NotImplementedError)):
        host.to(torch.float32)
    with pytest.raises((RuntimeError, NotImplementedError)):
        host.to(XDAL).to(torch.float32)
    assert torch.equal(host.to(XDAL).cpu().view(torch.uint8), host.view(torch.uint8))  # xdal still usable
