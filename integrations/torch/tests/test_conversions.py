"""Element type conversions on xdal give the CPU's results, bit for bit, out-of-range values included."""
import pytest
import torch

from conftest import SHARED_DTYPES

FLOATS = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]

# Values where conversions disagree if done differently: ties, the edges of
# every integer and float8 range, beyond them, infinities and subnormals.
EDGE_VALUES = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 127.0, 128.0, -129.0, 255.0, 256.0, -300.0, 32767.0, 32768.0,
               65504.0, 65520.0, 70000.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, 3e4, 2.0 ** 31, 3e9, -3e9,
               2.0 ** 63, 1e20, -1e20, 1e30, -1e30, 1e-8, 1e-40, float("inf"), float("-inf"), 2.0 ** -9,
               2.0 ** -17, 2.0 ** -25, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 2049.0, 16777217.0]
EDGE_INTS = [0, 1, -1, 127, 128, -129, 255, 256, 32767, 32768, -32769, 65535, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1,
             2 ** 53 + 1, 2 ** 63 - 1, -2 ** 63, 16777217, 2049, 2051, 100000]


def _source(dtype, repeat):
    if dtype == torch.bool:
        return torch.tensor([True, False]).repeat(repeat)
    if dtype.is_floating_point:
        return torch.tensor(EDGE_VALUES, dtype=torch.float64).to(dtype).repeat(repeat)
    return torch.tensor(EDGE_INTS, dtype=torch.int64).to(dtype).repeat(repeat)


def _bits(t):
    # NaN compares by being NaN (its payload is not specified, and the CPU's
    # own vector and scalar paths give different ones); everything else bitwise.
    if t.dtype.is_floating_point:
        nan = t.isnan()
        t = t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]).clone()
        t[nan] = 0
        return t, nan
    return t, None


@pytest.mark.parametrize("dst", SHARED_DTYPES, ids=str)
@pytest.mark.parametrize("src", SHARED_DTYPES, ids=str)
def test_conversion_matches_cpu_bitwise(src, dst):
    if src == dst:
        return
    # 1 copy: the CPU's scalar path; 300 copies: its vector path.
    for repeat in (1, 300):
        x = _source(src, repeat)
        want, want_nan = _bits(x.to(dst))
        for d in (x.to("xdal"), torch.stack([x, x], 1).to("xdal")[:, 0]):  # contiguous, then strided
            got, got_nan = _bits(d.to(dst).cpu())
            assert torch.equal(got, want), (src, dst, repeat, x[got != want][:4], want[got != want][:4],
                                            got[got != want][:4])
            if want_nan is not None:
                assert torch.equal(got_nan, want_nan)


def test_out_of_range_floats_convert_as_the_cpu_does():
    # The examples PyTorch users meet: C++ conversion of this machine, and
    # float8_e4m3fn saturating to 448 (0x7E), not NaN.
    x = torch.tensor([3e9, 57344.0, 3e4, 1e30])
    d = x.to("xdal")
    assert torch.equal(d.to(torch.int32).cpu(), x.to(torch.int32))
    assert d.to(torch.float8_e4m3fn).cpu().view(torch.uint8).tolist() == \
        x.to(torch.float8_e4m3fn).view(torch.uint8).tolist()
    assert x.to(torch.float8_e4m3fn).view(torch.uint8).tolist()[1:] == [0x7E] * 3


@pytest.mark.parametrize("dst", [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz], ids=str)
@pytest.mark.parametrize("src", FLOATS, ids=str)
def test_conversion_into_fnuz_float8_matches_cpu(src, dst):
    x = _source(src, 1)
    want = x.to(dst).view(torch.uint8)
    got = x.to("xdal").to(dst).cpu().view(torch.uint8)
    assert torch.equal(got, want)
