"""Native kernels (xdal built-ins) against the CPU, and the CPU fallback."""
import contextlib
import warnings

import pytest
import torch

from conftest import make, same

ARITH = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
         torch.int16, torch.int8, torch.uint8, torch.bool]
TOL = {torch.float16: dict(rtol=1e-3, atol=1e-3), torch.bfloat16: dict(rtol=1e-2, atol=1e-2),
       torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12)}


@contextlib.contextmanager
def no_fallback(*allowed):
    """Asserts the body ran on native kernels only."""
    torch.xdal.reset_fallback_counts()
    yield
    used = {k: v for k, v in torch.xdal.fallback_counts().items() if k not in allowed}
    assert not used, f"went through the CPU fallback: {used}"


@contextlib.contextmanager
def builtins_only():
    """Asserts the body launched no host kernel: only xdal built-ins, which
    every backend runs (a GPU backend cannot run host code)."""
    before = torch.xdal.host_kernel_launches()
    with no_fallback():
        yield
    assert torch.xdal.host_kernel_launches() == before, "a host kernel was launched"


def check(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape, ref.shape)
    got = got.cpu()
    if ref.dtype in TOL:
        torch.testing.assert_close(got, ref, **TOL[ref.dtype])
    else:
        assert torch.equal(got, ref)


@pytest.mark.parametrize("dtype", ARITH, ids=str)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_native(op, dtype):
    f = getattr(torch, op)
    a, b = make((7, 33), dtype, 1), make((7, 33), dtype, 2)
    da, db = a.xdal(), b.xdal()
    with no_fallback():
        check(f(da, db), f(a, b))
        check(f(da, db[0]), f(a, b[0]))  # broadcast
        check(f(da.t(), db.t()), f(a.t(), b.t()))  # strided operands
        out = torch.empty(7, 33, dtype=dtype, device="xdal")
        check(f(da, db, out=out), f(a, b))
        c = da.clone()
        getattr(c, op + "_")(db)
        check(c, getattr(a.clone(), op + "_")(b))
        if dtype != torch.bool:
            check(f(da, 3), f(a, 3))  # python scalar
            check(da * 2 + 1, a * 2 + 1)


def test_binary_type_promotion_and_operators():
    a = make((5, 4), torch.int32).xdal()
    b = make((5, 4), torch.float32).xdal()
    check(a + b, a.cpu() + b.cpu())
    check(b * torch.tensor(2.0), b.cpu() * 2.0)  # 0-dim CPU tensor operand
    check(a + 1.5, a.cpu() + 1.5)
    with builtins_only():  # axpby_<t>
        check(b.add(b, alpha=2), b.cpu().add(b.cpu(), alpha=2))
        check(a.add(a, alpha=-3), a.cpu().add(a.cpu(), alpha=-3))
        check(b - a, b.cpu() - a.cpu())
        check(torch.sub(a, a * 2, alpha=5), torch.sub(a.cpu(), a.cpu() * 2, alpha=5))
        u = torch.arange(10, dtype=torch.uint8).xdal()
        check(u - 7, u.cpu() - 7)  # wraps as the CPU does
        y = b.clone()
        y.sub_(b[0], alpha=0.5)
        check(y, b.cpu() - 0.5 * b.cpu()[0])
    x = b.clone()
    x += b
    check(x, b.cpu() * 2)
    check(x[1:3] + x[:2], x.cpu()[1:3] + x.cpu()[:2])  # overlapping views


def test_python_numbers_wrap_into_the_result_type_as_on_the_cpu():
    """A Python number converts to the result type as the CPU converts it:
    uint8 + 1000 is uint8, wrapped (it used to be refused as an overflow)."""
    u = torch.tensor([0, 0, 1, 200], dtype=torch.uint8)
    i8 = torch.tensor([1, -2, 3], dtype=torch.int8)
    with builtins_only():
        for got, want in [(u.xdal() + 1000, u + 1000), (u.xdal() - 300, u - 300), (u.xdal() * 300, u * 300),
                          (i8.xdal() * 200, i8 * 200), (u.xdal() + True, u + True)]:
            check(got, want)


def test_add_and_sub_refuse_what_the_cpu_refuses():
    """alpha and bool operands are checked as on the CPU, before anything
    runs: no fractional alpha for integer results, no bool alpha for others,
    no subtraction with a bool tensor."""
    i, f, m = torch.ones(4, dtype=torch.int32), torch.ones(4), torch.tensor([True, False, True, False])
    refused = [
        (RuntimeError, "alpha must not be a floating point number", lambda d: torch.add(d(i), d(i), alpha=1.1)),
        (RuntimeError, "alpha must not be a floating point number", lambda d: torch.add(d(m), d(m), alpha=1.1)),
        (RuntimeError, "alpha must not be a floating point number", lambda d: d(i).sub_(d(i), alpha=0.5)),
        (RuntimeError, "Boolean alpha only supported", lambda d: torch.add(d(f), d(f), alpha=True)),
        (NotImplementedError, "with two bool tensors is not supported", lambda d: d(m) - d(m)),
        (NotImplementedError, "with a bool tensor is not supported", lambda d: d(m) - d(i)),
        (NotImplementedError, "with a bool tensor is not supported", lambda d: torch.sub(d(i), d(m), out=d(i.clone()))),
    ]
    for error, message, call in refused:
        for d in (lambda t: t, lambda t: t.xdal()):
            with pytest.raises(error, match=message):
                call(d)
    check(torch.add(m.xdal(), m.xdal(), alpha=True), torch.add(m, m, alpha=True))
    check(torch.add(f.xdal(), f.xdal(), alpha=1.5), torch.add(f, f, alpha=1.5))


@pytest.mark.parametrize("dtype", ARITH, ids=str)
def test_sum_native(dtype):
    x = make((13, 29), dtype, 5)
    d = x.xdal()
    with no_fallback():
        check(d.sum(), x.sum())
        check(d.t().sum(), x.t().sum())
        check(torch.sum(d, dim=(0, 1), keepdim=True), torch.sum(x, dim=(0, 1), keepdim=True))
        if dtype.is_floating_point:
            check(d.sum(dtype=torch.float64), x.sum(dtype=torch.float64))
    with no_fallback():  # sum_dim_<t>
        check(d.sum(0), x.sum(0))
        check(d.sum(1, keepdim=True), x.sum(1, keepdim=True))
        check(d.t().sum(0), x.t().sum(0))
        y = make((3, 4, 5), dtype, 6)
        check(y.xdal().sum(-2), y.sum(-2))
    check(y.xdal().sum((0, 2)), y.sum((0, 2)))  # two of three dimensions: fallback


def test_sum_refuses_what_the_cpu_refuses():
    """A dimension named twice, or a tensor of more than 64 dimensions
    reduced along some, is the CPU's error, not a sum over fewer dimensions."""
    d = make((3, 4, 5), torch.float32).xdal()
    for dims in [(0, 0), (1, -2), (0, 1, 1, 2)]:
        with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
            d.sum(dims)
    wide = torch.ones([1] * 65, device="xdal")
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        wide.sum(0)
    assert wide.sum().item() == 1  # all dimensions: allowed, as on the CPU
    with pytest.raises(IndexError, match="Dimension out of range"):
        d.sum(3)
    check(d.sum((0, 1, 2)), d.cpu().sum((0, 1, 2)))  # each named once: the full sum


def test_operands_on_another_device_are_refused_as_on_cuda():
    """A device kernel takes its operands on its device: a CPU tensor is
    refused with PyTorch's message, except a CPU scalar read as a value and
    the indices of the index operators; a CPU out= or a CPU tensor written
    in place is refused too, before anything is written."""
    x = make((3,), torch.float32)
    d, c = x.xdal(), make((3,), torch.float32, seed=1)
    same_device = "Expected all tensors to be on the same device, but found at least two devices, xdal:0 and cpu!"
    refused = {
        "binary": lambda: d + c,
        "atan2": lambda: torch.atan2(d, c),
        "where condition": lambda: torch.where(c > 0, d, d),
        "cat": lambda: torch.cat([d, c]),
        "mm": lambda: torch.mm(d.view(1, 3), c.view(3, 1)),
        "index_put values": lambda: d.clone().index_put_((torch.tensor([0, 1]),), torch.tensor([5.0, 6.0])),
        "cpu out": lambda: torch.atan2(d, d, out=torch.empty(3)),
        "cpu out of nonzero": lambda: torch.nonzero(d, out=torch.empty(0, dtype=torch.long)),
        "cpu written in place": lambda: c.clone().atan2_(d),
    }
    for name, f in refused.items():
        with pytest.raises(RuntimeError, match=same_device):
            f()
    torch.testing.assert_close((d * torch.tensor(2.0)).cpu(), x * 2)  # a CPU scalar
    torch.testing.assert_close(torch.atan2(d, torch.tensor(2.0)).cpu(), torch.atan2(x, torch.tensor(2.0)))
    assert torch.equal(d[torch.tensor([2, 0])].cpu(), x[torch.tensor([2, 0])])  # CPU indices
    y = d.clone()
    y.index_put_((torch.tensor([1]),), torch.tensor(7.0))  # CPU indices and a CPU scalar value
    assert y.cpu()[1] == 7 and torch.equal(d.cpu(), x)
    # A CPU tensor indexed with xdal indices, or indices on another xdal
    # device: CUDA's index kernels' message, naming the indexed tensor's device.
    indexed = [
        ("cpu", lambda: x[torch.tensor([0, 2]).xdal()]),
        ("cpu", lambda: x.view(3, 1)[torch.tensor([0, 2]).xdal(), 0]),
        ("xdal:0", lambda: d[torch.tensor([0, 2]).to("xdal:1")]),
    ]
    for device, f in indexed:
        with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same device as the "
                                               r"indexed tensor \(" + device + r"\)"):
            f()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32], ids=str)
def test_mm_native(dtype):
    a, b = make((9, 17), dtype, 1), make((17, 6), dtype, 2)
    da, db = a.xdal(), b.xdal()
    ref = (a.double() @ b.double()).to(dtype) if dtype in (torch.float16, torch.bfloat16) else a @ b
    with no_fallback():
        check(torch.mm(da, db), ref)
        check(da @ db, ref)
        check(torch.matmul(da, db), ref)
        check(torch.mm(db.t(), da.t()), ref.t().contiguous())
        out = torch.empty(9, 6, dtype=dtype, device="xdal")
        torch.mm(da, db, out=out)
        check(out, ref)


def test_to_dtype_native():
    x = make((8, 8), torch.float32).xdal()
    with no_fallback():
        for dt in (torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.uint8, torch.bool):
            check(x.to(dt), x.cpu().to(dt))
            check(x.t().to(dt), x.cpu().t().to(dt))
        check(x.double().half(), x.cpu().double().half())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.int8, torch.bool], ids=str)
def test_strided_copies_fills_and_casts_run_on_builtins(dtype):
    x = make((6, 7, 5), dtype, 3)
    d = x.xdal()
    with builtins_only():
        check(d.permute(2, 0, 1).contiguous(), x.permute(2, 0, 1).contiguous())
        check(d[:, ::2, 1:].clone(), x[:, ::2, 1:].clone())
        e = torch.empty_strided((5, 6, 7), (1, 35, 5), dtype=dtype, device="xdal")
        e.copy_(d.permute(2, 0, 1))
        check(e, x.permute(2, 0, 1))
        z = torch.zeros(6, 7, 5, dtype=dtype, device="xdal")
        z[:, 1::3].fill_(1)
        ref = torch.zeros(6, 7, 5, dtype=dtype)
        ref[:, 1::3].fill_(1)
        check(z, ref)
        for to in (torch.float64, torch.float32, torch.int32, torch.int16, torch.bool):
            if dtype.is_floating_point and not to.is_floating_point and to != torch.bool:
                continue  # float to integer: the host kernel (below)
            check(d.transpose(0, 2).to(to), x.transpose(0, 2).to(to))


def test_casts_pytorch_makes_differently_match_the_cpu():
    # Floats to uint8 go through int64 in PyTorch (negative values wrap),
    # to the other integers by C++ conversion (out of range: not
    # saturated); float8_e4m3fn saturates to 448; f64 to f16 rounds twice.
    # The built-ins convert otherwise: the host conversion kernel where the
    # backend runs host code, the CPU where it does not.
    host = torch.xdal.runs_host_kernels()
    x = (torch.randn(64, dtype=torch.float32) * 100).xdal()
    before = torch.xdal.host_kernel_launches()
    check(x.to(torch.uint8), x.cpu().to(torch.uint8))
    for to in (torch.int32, torch.int8, torch.float8_e4m3fn):
        before_this = torch.xdal.host_kernel_launches()
        assert same(x.to(to).cpu(), x.cpu().to(to)), to
        assert same(x[::2].to(to).cpu(), x.cpu()[::2].to(to)), to
        assert (torch.xdal.host_kernel_launches() > before_this) == host, to
    w = torch.randn(64, dtype=torch.float64).xdal() * 1e4
    check(w.to(torch.float16), w.cpu().to(torch.float16))
    assert (torch.xdal.host_kernel_launches() > before) == host


def _values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype) * 100
    if dtype == torch.uint16:
        return torch.randint(0, 65535, shape, generator=g, dtype=torch.int32).to(dtype)
    return make(shape, dtype, seed)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, torch.uint16, torch.float8_e5m2], ids=str)
def test_moves_and_fills_of_any_dtype_run_on_builtins(dtype):
    # An element is moved and filled as an integer of its size (complex128
    # as two 8-byte halves): no host kernel, so every backend runs them.
    x = _values((6, 7, 5), dtype, 3)
    d = x.xdal()
    value = (1.5 - 2.25j) if dtype.is_complex else 3
    with builtins_only():
        assert same(d.permute(2, 0, 1).contiguous().cpu(), x.permute(2, 0, 1).contiguous())
        assert same(d[:, ::2, 1:].clone().cpu(), x[:, ::2, 1:].clone())
        e = torch.empty_strided((5, 6, 7), (1, 35, 5), dtype=dtype, device="xdal")
        e.copy_(d.permute(2, 0, 1))
        assert same(e.cpu(), x.permute(2, 0, 1))
        z = torch.zeros(6, 7, 5, dtype=dtype, device="xdal")
        z[:, 1::3].fill_(value)
        z[0].fill_(value)
        ref = torch.zeros(6, 7, 5, dtype=dtype)
        ref[:, 1::3].fill_(value)
        ref[0].fill_(value)
        assert same(z.cpu(), ref)
        b = torch.empty(3, 4, dtype=dtype, device="xdal").expand(2, 3, 4)
        b.fill_(value)  # elements that share memory: each distinct one written
        assert same(b.cpu(), torch.full((2, 3, 4), value, dtype=dtype))


def test_elementwise_results_take_pytorch_strides():
    # TensorIterator's rule, as on the CPU: channels_last in, channels_last out.
    x = make((2, 3, 4, 5), torch.float32).contiguous(memory_format=torch.channels_last)
    d = x.xdal()
    with no_fallback():
        for f in (lambda t: t + 1, lambda t: t * t, lambda t: t - t.contiguous(), lambda t: t + t.new_ones(5)):
            got, ref = f(d), f(x)
            assert got.stride() == ref.stride()
            check(got, ref)
        assert torch.empty_like(d).stride() == x.stride()
    t = make((4, 5), torch.float32).t()
    assert (t.xdal() * 2).stride() == (t * 2).stride()
    # A channels_last tensor whose size-1 dimensions make it contiguous too
    # keeps its strides of them, as TensorIterator keeps them.
    ambiguous = make((10, 3, 1, 1), torch.float32).contiguous(memory_format=torch.channels_last)
    bias = make((3, 1, 1), torch.float32)
    with no_fallback():
        for f in (lambda a, b: a + b, lambda a, b: b + a, lambda a, b: a * 5):
            assert f(ambiguous.xdal(), bias.xdal()).stride() == f(ambiguous, bias).stride() == ambiguous.stride()


def test_an_empty_out_resized_by_the_fallback_takes_the_cpu_kernels_layout():
    # abs.out resizes an empty out= to its input's layout on the CPU (its
    # TensorIterator), where the meta kernel makes it contiguous.
    x = make((4, 3, 8, 8), torch.float32).contiguous(memory_format=torch.channels_last)
    out, ref = torch.empty(0, device="xdal"), torch.empty(0)
    torch.abs(x.xdal(), out=out)
    torch.abs(x, out=ref)
    assert out.stride() == ref.stride() == x.stride()
    check(out, ref)
    assert torch.abs(x.xdal()).stride() == x.stride()


def test_native_ops_do_not_fall_back():
    with no_fallback():
        x = torch.empty(100, device="xdal").fill_(1.5)
        y = torch.zeros(100, device="xdal")
        z = x.to(torch.float64) * 2
        w = (x + y).sum()
        v = torch.ones(4, 4, device="xdal") @ torch.ones(4, 4, device="xdal")
        x.resize_(200)
        e = torch.empty_strided((3, 4), (1, 3), device="xdal")
        e.copy_(torch.randn(3, 4))
    assert w.item() == 150.0 and z.cpu()[0].item() == 3.0 and v.cpu()[0, 0].item() == 4.0


# A few dozen other operators, through the CPU fallback, against the CPU.
def _f(x):
    return make((6, 5), torch.float32, x)


FALLBACK = {
    "abs": lambda a, b: a.abs(), "neg": lambda a, b: -a, "exp": lambda a, b: a.exp(),
    "log_abs": lambda a, b: a.abs().log(), "sqrt_abs": lambda a, b: a.abs().sqrt(),
    "sin": lambda a, b: a.sin(), "cos": lambda a, b: a.cos(), "tanh": lambda a, b: a.tanh(),
    "sigmoid": lambda a, b: a.sigmoid(), "relu": lambda a, b: torch.relu(a),
    "gelu": lambda a, b: torch.nn.functional.gelu(a), "softmax": lambda a, b: a.softmax(-1),
    "log_softmax": lambda a, b: a.log_softmax(0), "sub": lambda a, b: a - b, "div": lambda a, b: a / b,
    "pow": lambda a, b: a.abs() ** 1.5, "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b), "clamp": lambda a, b: a.clamp(-1, 1),
    "where": lambda a, b: torch.where(a > 0, a, b), "gt": lambda a, b: a > b, "eq": lambda a, b: a == a,
    "mean": lambda a, b: a.mean(), "mean_dim": lambda a, b: a.mean(1), "prod": lambda a, b: a.prod(0),
    "max": lambda a, b: a.max(), "argmax": lambda a, b: a.argmax(1), "min_dim": lambda a, b: a.min(0)[0],
    "std": lambda a, b: a.std(), "var": lambda a, b: a.var(0), "norm": lambda a, b: a.norm(),
    "cumsum": lambda a, b: a.cumsum(0), "sort": lambda a, b: a.sort(1)[0], "topk": lambda a, b: a.topk(2)[0],
    "cat": lambda a, b: torch.cat([a, b]), "stack": lambda a, b: torch.stack([a, b]),
    "index_select": lambda a, b: a.index_select(0, torch.tensor([0, 2], device=a.device)),
    "gather": lambda a, b: a.gather(1, torch.zeros(6, 2, dtype=torch.long, device=a.device)),
    "masked_fill": lambda a, b: a.masked_fill(a > 0, 0.0), "flip": lambda a, b: a.flip(0),
    "roll": lambda a, b: a.roll(1, 1), "tril": lambda a, b: a.tril(), "triu": lambda a, b: a.triu(1),
    "transpose_clone": lambda a, b: a.t().clone(), "bmm": lambda a, b: torch.bmm(a[None], b.t()[None]),
    "mv": lambda a, b: torch.mv(a, b[0]), "dot": lambda a, b: torch.dot(a[0], b[0]),
    "addmm": lambda a, b: torch.addmm(a[:, :5], a[:, :5], b[:5]),
    "linear": lambda a, b: torch.nn.functional.linear(a, b[:4]), "outer": lambda a, b: torch.outer(a[0], b[0]),
    "arange": lambda a, b: torch.arange(10, device=a.device), "linspace": lambda a, b: torch.linspace(0, 1, 7, device=a.device),
    "eye": lambda a, b: torch.eye(4, device=a.device), "full": lambda a, b: torch.full((2, 3), 4.0, device=a.device),
    "nonzero": lambda a, b: (a > 0).nonzero(), "unique": lambda a, b: torch.unique((a * 2).round()),
    "any": lambda a, b: (a > 1).any(), "all": lambda a, b: (a > -10).all(), "round": lambda a, b: a.round(),
    "floor_divide": lambda a, b: torch.floor_divide(a, 0.7), "remainder": lambda a, b: a.remainder(0.7),
    "lerp": lambda a, b: torch.lerp(a, b, 0.3), "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5),
    "conv1d": lambda a, b: torch.nn.functional.conv1d(a[None], b.t()[:, :, None]),
    "layer_norm": lambda a, b: torch.nn.functional.layer_norm(a, (5,)),
    "mse_loss": lambda a, b: torch.nn.functional.mse_loss(a, b),
    "cross_entropy": lambda a, b: torch.nn.functional.cross_entropy(a, torch.tensor([0, 1, 2, 3, 4, 0], device=a.device)),
    "einsum": lambda a, b: torch.einsum("ij,ij->i", a, b), "repeat": lambda a, b: a.repeat(2, 1),
    "index_put": lambda a, b: a.clone().index_put_((torch.tensor([1, 3], device=a.device),), torch.tensor(9.0, device=a.device)),
    "scatter_add": lambda a, b: torch.zeros(6, 5, device=a.device).scatter_add(0, torch.zeros(6, 5, dtype=torch.long, device=a.device), b),
}


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_fallback_matches_cpu(name):
    f = FALLBACK[name]
    a, b = _f(1), _f(2)
    with warnings.catch_warnings(record=True) as cpu_warnings:
        warnings.simplefilter("always")
        ref = f(a, b)
    with warnings.catch_warnings(record=True) as xdal_warnings:
        warnings.simplefilter("always")
        got = f(a.xdal(), b.xdal())
    assert got.device.type == "xdal", got.device
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-5, atol=1e-5)
    assert got.stride() == ref.stride()
    # No warning the CPU does not give (mse_loss warned of a resized out=).
    assert [str(w.message) for w in xdal_warnings] == [str(w.message) for w in cpu_warnings]


@pytest.mark.parametrize("f", [
    lambda x: torch.nn.functional.pad(x, (1, 2, 2, 1), mode="replicate"),
    lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"),
    lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
    lambda x: torch.clamp(x, -1, 1),
], ids=["replicate_pad", "reflect_pad", "upsample_bilinear", "clamp"])
def test_fallback_results_take_the_cpu_kernels_layout(f):
    """Operators without an xdal kernel run the CPU's kernel of the operator
    called, not PyTorch's generated wrapper around its out= variant, whose
    meta function lays a channels_last result out contiguous."""
    x = make((2, 3, 5, 6), torch.float32).contiguous(memory_format=torch.channels_last)
    ref, got = f(x), f(x.xdal())
    assert got.stride() == ref.stride()
    torch.testing.assert_close(got.cpu(), ref)


def _scripted_assignments(x):
    x[x < 50] = 1.0  # index_put_ with a device mask and a device value
    y = torch.cat([x[:2], x[-2:]])  # a Tensor[] TorchScript builds
    return x, y


def test_fallback_takes_the_lists_torchscript_builds():
    """TorchScript passes an index operator's Tensor?[] indices in a list
    whose element type is not the canonical object: the fallback still sees
    the xdal mask in it (it used to reach the CPU kernel as an xdal tensor,
    and the stream failed stickily)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit.script is deprecated, still used
        scripted = torch.jit.script(_scripted_assignments)
    x = torch.arange(100, dtype=torch.float32)
    want_x, want_y = _scripted_assignments(x.clone())
    got_x, got_y = scripted(x.xdal())
    assert torch.equal(got_x.cpu(), want_x) and torch.equal(got_y.cpu(), want_y)
    torch.xdal.synchronize()  # the stream is fine


def test_fallback_in_place_and_out():
    a = _f(3)
    d = a.xdal()
    d.exp_()
    torch.testing.assert_close(d.cpu(), a.exp())
    out = torch.empty(0, device="xdal")
    torch.sin(a.xdal(), out=out)
    torch.testing.assert_close(out.cpu(), a.sin())
    assert "aten::sin.out" in torch.xdal.fallback_counts()
