"""Creation, round trips, copies in every direction, resize_, views."""
import warnings

import pytest
import torch

from conftest import SHARED_DTYPES, make, same


@pytest.mark.parametrize("dtype", SHARED_DTYPES, ids=str)
def test_round_trip(dtype):
    x = make((3, 5, 7), dtype)
    y = x.to("xdal")
    assert y.device.type == "xdal" and y.dtype == dtype and y.shape == x.shape
    assert same(y.cpu(), x)
    z = y.to("xdal:1")
    assert z.device == torch.device("xdal:1")
    assert same(z.cpu(), x)


@pytest.mark.parametrize("dtype", SHARED_DTYPES + [torch.complex64, torch.complex128, torch.uint16], ids=str)
def test_creation(dtype):
    e = torch.empty(4, 5, dtype=dtype, device="xdal")
    assert e.shape == (4, 5) and e.dtype == dtype and e.is_contiguous()
    s = torch.empty_strided((4, 5), (1, 4), dtype=dtype, device="xdal")
    assert s.stride() == (1, 4)
    z = torch.zeros(3, 2, dtype=dtype, device="xdal")
    assert same(z.cpu(), torch.zeros(3, 2, dtype=dtype))
    if dtype not in (torch.uint16,):
        o = torch.ones(3, 2, dtype=dtype, device="xdal")
        assert same(o.cpu(), torch.ones(3, 2, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float64], ids=str)
def test_new_empty_strided_keeps_its_strides(dtype):
    """Zero strides included, as empty_strided's (it reached the fallback,
    which made the strides dense or failed the stream)."""
    x = torch.zeros(5, 5, dtype=dtype, device="xdal")
    for sizes, strides in [((2, 3), (3, 1)), ((5, 3), (0, 1)), ((), ()), ((4, 2), (1, 4))]:
        r = x.new_empty_strided(sizes, strides)
        assert (r.shape, r.stride(), r.dtype, r.device) == (torch.Size(sizes), strides, dtype, x.device)
    assert x.new_empty_strided((2, 2), (2, 1), dtype=torch.float16).dtype == torch.float16
    torch.xdal.synchronize()


@pytest.mark.parametrize("dtype", SHARED_DTYPES, ids=str)
def test_non_contiguous_copies(dtype):
    x = make((6, 8), dtype)
    d = x.to("xdal")
    # device -> host from a strided view
    assert same(d.t().cpu(), x.t())
    assert same(d[1::2, ::3].cpu(), x[1::2, ::3])
    # host strided -> device
    assert same(x.t().to("xdal").cpu(), x.t())
    # host -> strided device view
    d2 = torch.zeros(8, 6, dtype=dtype, device="xdal")
    d2.t().copy_(x)
    assert same(d2.cpu(), x.t().contiguous())
    # device strided -> device strided
    d3 = torch.zeros(6, 8, dtype=dtype, device="xdal")
    d3[:, ::2] = d[:, 1::2]
    ref = torch.zeros(6, 8, dtype=dtype)
    ref[:, ::2] = x[:, 1::2]
    assert same(d3.cpu(), ref)
    # broadcast source
    d4 = torch.empty(4, 8, dtype=dtype, device="xdal")
    d4.copy_(d[0])
    assert same(d4.cpu(), x[0].expand(4, 8))


@pytest.mark.parametrize("src", SHARED_DTYPES, ids=str)
def test_dtype_conversions_match_cpu(src):
    x = make((5, 9), src, seed=3)
    d = x.to("xdal")
    for dst in SHARED_DTYPES:
        ref = x.to(dst)
        assert same(d.to(dst).cpu(), ref), (src, dst)
        assert same(d.t().to(dst).cpu(), x.t().to(dst)), (src, dst)  # strided: host kernel
        assert same(x.to("xdal", dst).cpu(), ref), (src, dst)  # converting upload


def test_float_to_int_truncates_like_cpu():
    x = torch.tensor([1.5, 2.5, -1.5, -2.7, 3.9])
    assert torch.equal(x.xdal().to(torch.int32).cpu(), x.to(torch.int32))


def test_cross_device_copies():
    x = make((32, 17), torch.float32)
    a = x.to("xdal:0")
    b = a.to("xdal:1")
    assert b.device.index == 1 and torch.equal(b.cpu(), x)
    c = a.t().to("xdal:1", torch.float64)
    assert torch.equal(c.cpu(), x.t().double())
    d = torch.zeros(17, 32, device="xdal:1")
    d.copy_(a.t())
    assert torch.equal(d.cpu(), x.t())


def test_complex_and_conj_round_trip():
    x = torch.randn(4, 3, dtype=torch.complex64)
    d = x.xdal()
    assert torch.equal(d.cpu(), x)
    assert torch.equal(d.conj().cpu(), x.conj())
    assert torch.equal(d.conj().resolve_conj().cpu(), x.conj().resolve_conj())
    assert torch.equal(torch.view_as_real(d).cpu(), torch.view_as_real(x))
    assert torch.equal((-d).cpu(), -x)


def test_resize_keeps_contents():
    x = torch.arange(10, dtype=torch.float32)
    d = x.xdal()
    d.resize_(20)
    assert d.shape == (20,)
    assert torch.equal(d[:10].cpu(), x)
    d.resize_(2, 3)
    assert d.shape == (2, 3) and d.is_contiguous()
    assert torch.equal(d.cpu().flatten(), x[:6])
    e = torch.empty(0, device="xdal")
    e.resize_(5).fill_(2)
    assert e.cpu().tolist() == [2.0] * 5
    s = torch.arange(4.0).xdal().untyped_storage()
    s.resize_(32)
    assert s.nbytes() == 32


def test_views_share_memory():
    d = torch.zeros(4, 6, device="xdal")
    v = d.view(6, 4)
    v[0].fill_(1)
    assert d.cpu()[0].tolist() == [1.0] * 4 + [0.0] * 2
    t = d.t()
    t[5] = 7
    assert d.cpu()[:, 5].tolist() == [7.0] * 4
    u = d.unfold(1, 2, 2)
    assert u.shape == (4, 3, 2)
    assert d.reshape(24).data_ptr() == d.data_ptr()
    n = d.narrow(1, 2, 3)
    n.zero_()
    assert d.cpu()[:, 2:5].abs().sum().item() == 0
    s = d.as_strided((2, 2), (6, 1), 1)
    assert s.storage_offset() == 1
    d2 = torch.empty(0, device="xdal").set_(d.untyped_storage(), 0, (24,), (1,))
    assert d2.data_ptr() == d.data_ptr()


def test_item_and_scalars():
    d = torch.tensor([3.5, -1.0]).xdal()
    assert d[0].item() == 3.5
    assert torch.tensor(7, dtype=torch.int64).xdal().item() == 7
    assert torch.tensor(True).xdal().item() is True
    assert d.tolist() == [3.5, -1.0]


@pytest.mark.parametrize("dtype", SHARED_DTYPES + [torch.complex64], ids=str)
def test_fill_matches_cpu(dtype):
    for value in (0, 1, -3, 2.75, True):
        try:
            ref = torch.empty(7, 5, dtype=dtype).fill_(value)
        except RuntimeError:
            continue
        d = torch.empty(7, 5, dtype=dtype, device="xdal").fill_(value)
        assert same(d.cpu(), ref), (dtype, value)
        s = torch.zeros(7, 5, dtype=dtype, device="xdal")
        s[:, 1::2].fill_(value)  # strided: host kernel
        r2 = torch.zeros(7, 5, dtype=dtype)
        r2[:, 1::2].fill_(value)
        assert same(s.cpu(), r2), (dtype, value)
    z = torch.ones(3, 4, dtype=dtype, device="xdal").zero_()
    assert same(z.cpu(), torch.zeros(3, 4, dtype=dtype))


def test_fill_with_tensor_value():
    d = torch.empty(3, device="xdal")
    d.fill_(torch.tensor(2.5))
    d.fill_(torch.tensor(4.0, device="xdal"))
    assert d.cpu().tolist() == [4.0] * 3


def test_zero_size_tensors():
    d = torch.empty(0, 3, device="xdal")
    assert d.cpu().shape == (0, 3)
    d.fill_(1)
    assert (d + d).shape == (0, 3)
    assert torch.zeros(0, device="xdal").sum().item() == 0


def test_non_blocking_copies():
    x = torch.randn(1000)
    d = x.to("xdal", non_blocking=True)
    p = torch.empty(1000).pin_memory()
    p.copy_(d, non_blocking=True)
    torch.accelerator.synchronize()
    assert torch.equal(p, x)
    q = torch.randn(1000).pin_memory()
    d2 = q.to("xdal", non_blocking=True)
    assert torch.equal(d2.cpu(), q)


@pytest.mark.parametrize("dtype,name", [(torch.float32, "FloatStorage"), (torch.bfloat16, "BFloat16Storage"),
                                        (torch.int64, "LongStorage"), (torch.bool, "BoolStorage")], ids=str)
def test_typed_storage_classes(dtype, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage is deprecated
        t = torch.zeros(3, dtype=dtype, device="xdal")
        s = t.storage()
        assert s.type() == f"torch.xdal.{name}"
        cls = getattr(torch.xdal, name)
        assert isinstance(s, cls) and not isinstance(s, getattr(torch, name))
        assert not isinstance(t.cpu().storage(), cls)
        made = cls(4)
        assert made.device.type == "xdal" and made.dtype == dtype and made.size() == 4
        assert t.cpu().storage().type() == f"torch.{name}"


def test_is_set_to():
    a = torch.randn(3, 4, device="xdal")
    b = torch.empty(0, device="xdal")
    b.set_(a)
    assert b.is_set_to(a) and a.is_set_to(b)
    assert not b.is_set_to(a.clone())
    assert not a.t().is_set_to(a)  # same storage, other strides


def test_data_assignment_across_devices():
    # As the CPU and CUDA allow: the variable takes the other tensor's device.
    p = torch.nn.Parameter(torch.randn(3))
    p.data = torch.ones(3, device="xdal")
    assert p.device.type == "xdal" and isinstance(p, torch.nn.Parameter)
    assert p.sum().item() == 3.0
    p.data = torch.zeros(2)
    assert p.device.type == "cpu" and p.shape == (2,)
    t = torch.randn(2, device="xdal")
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        t.data = torch.randn(2).to_sparse()


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.int32, torch.uint8, torch.bool], ids=str)
def test_deterministic_mode_fills_new_memory(dtype):
    """torch.use_deterministic_algorithms(True) fills what empty() and a
    growing resize_() hand out, as on the CPU: NaN, or the largest value."""
    def filled(t):
        if dtype.is_floating_point or dtype.is_complex:
            return bool(t.isnan().all())
        top = True if dtype == torch.bool else torch.iinfo(dtype).max
        return bool(t.eq(top).all())

    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert filled(torch.empty(10, 9, device="xdal", dtype=dtype))
        assert filled(torch.empty_strided((10, 9), (1, 10), device="xdal", dtype=dtype))
        assert filled(torch.empty_like(torch.zeros(4, 5, device="xdal", dtype=dtype)))
        grown = torch.zeros(6, device="xdal", dtype=dtype)
        grown.resize_(20)
        assert not grown[:6].cpu().any() and filled(grown[6:])
    finally:
        torch.use_deterministic_algorithms(before)
