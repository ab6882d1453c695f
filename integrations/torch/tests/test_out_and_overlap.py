"""out= tensors and memory overlap, as PyTorch's CPU does them.

An out= tensor of the right shape is written in place through its own
strides (a view writes into its base); one of the wrong shape is resized,
with PyTorch's warning when it had elements. Writes that PyTorch refuses
because written elements share memory (with themselves, or partially with
an input) are refused with PyTorch's message before anything is queued, so
the device stays usable; fill_ of such a tensor is allowed, as on the CPU.
"""
import warnings

import pytest
import torch

from conftest import make

VIEWS = {
    "transposed": lambda base: base.t(),
    "sliced": lambda base: base[:, ::2],
}


def _out_like(view_name, base_shape):
    """A CPU base and its xdal twin, and the out view of each."""
    base = make(base_shape, torch.float32, seed=7)
    xbase = base.xdal()
    return base, xbase, VIEWS[view_name](base), VIEWS[view_name](xbase)


def _check_view_written_in_place(op, view_name, make_inputs):
    base, xbase, out, xout = _out_like(view_name, (6, 8))
    inputs = make_inputs(tuple(out.shape))
    strides = xout.stride()
    op(*inputs, out=out)
    op(*[i.xdal() if isinstance(i, torch.Tensor) else i for i in inputs], out=xout)
    assert xout.stride() == strides, "the out= view's strides changed"
    torch.testing.assert_close(xbase.cpu(), base)


@pytest.mark.parametrize("view_name", VIEWS)
@pytest.mark.parametrize("op", [torch.abs, torch.neg, torch.exp, torch.sin, torch.sqrt])
def test_unary_out_view_is_written_in_place(op, view_name):
    _check_view_written_in_place(op, view_name, lambda shape: (make(shape, torch.float32).abs() + 0.5,))


@pytest.mark.parametrize("view_name", VIEWS)
@pytest.mark.parametrize("op", [torch.maximum, torch.minimum, torch.add, torch.mul, torch.sub, torch.atan2])
def test_binary_out_view_is_written_in_place(op, view_name):
    _check_view_written_in_place(op, view_name, lambda shape: (make(shape, torch.float32, 1),
                                                               make(shape, torch.float32, 2)))


@pytest.mark.parametrize("view_name", VIEWS)
def test_mm_and_sum_out_views_are_written_in_place(view_name):
    _check_view_written_in_place(torch.mm, view_name,
                                 lambda shape: (make((shape[0], 3), torch.float32, 1),
                                                make((3, shape[1]), torch.float32, 2)))
    _check_view_written_in_place(lambda x, out: torch.sum(x, dim=0, out=out), view_name,
                                 lambda shape: (make((5,) + shape, torch.float32, 3),))


@pytest.mark.parametrize("factory", [
    lambda out: torch.arange(0, 8, out=out),
    lambda out: torch.linspace(-1, 1, 8, out=out),
    lambda out: torch.logspace(0, 2, 8, out=out),
    lambda out: torch.range(0, 7, out=out),
])
def test_factory_out_slice_is_written_in_place(factory):
    base = torch.zeros(16)
    xbase = base.xdal()
    factory(base[::2])
    factory(xbase[::2])
    torch.testing.assert_close(xbase.cpu(), base)


def test_cat_out_view_is_written_in_place():
    base, xbase, out, xout = _out_like("transposed", (6, 8))
    parts = [make((3, 6), torch.float32, 1), make((5, 6), torch.float32, 2)]
    torch.cat(parts, out=out)
    torch.cat([p.xdal() for p in parts], out=xout)
    torch.testing.assert_close(xbase.cpu(), base)


def _resize_warnings(op, x, out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op(x, out=out)
    return [str(w.message) for w in caught if "was resized" in str(w.message)]


@pytest.mark.parametrize("op", [torch.exp, torch.ceil, lambda x, out: torch.add(x, x, out=out)])
def test_out_of_the_wrong_shape_is_resized_with_pytorchs_warning(op):
    """Once, as on the CPU (a meta kernel written in Python warned a second
    time beside the CPU kernel's own warning)."""
    x = make((4, 5), torch.float32)
    out = torch.empty(3, device="xdal")
    warned = _resize_warnings(op, x.xdal(), out)
    assert out.shape == (4, 5) and out.is_contiguous()
    torch.testing.assert_close(out.cpu(), op(x, out=torch.empty(0)))
    assert len(warned) == len(_resize_warnings(op, x, torch.empty(3))) == 1, warned
    empty = torch.empty(0, device="xdal")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out= is resized silently
        op(x.xdal(), out=empty)


def test_fill_of_an_expanded_tensor_fills_its_memory():
    for device in ("cpu", "xdal"):
        base = torch.zeros(3, device=device)
        base.expand(4, 3).fill_(2.5)
        base.unsqueeze(1).expand(3, 5).zero_()
        assert base.cpu().tolist() == [0.0, 0.0, 0.0]
        base.expand(2, 3).fill_(1)
        assert base.cpu().tolist() == [1.0, 1.0, 1.0]


INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"


def _refuses_like_the_cpu(write, message):
    """`write(device)` raises PyTorch's overlap error on the CPU and on xdal,
    and xdal's device works afterwards (nothing refused was queued)."""
    with pytest.raises(RuntimeError, match=message):
        write("cpu")
    with pytest.raises(RuntimeError, match=message):
        write("xdal")
    torch.xdal.synchronize()
    a = torch.arange(4.0, device="xdal")
    assert (a + a).cpu().tolist() == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.parametrize("write", [
    lambda d: torch.zeros(3, device=d).expand(2, 3).copy_(torch.ones(2, 3, device=d)),
    lambda d: torch.zeros(3, device=d).expand(2, 3).copy_(torch.ones(2, 3)),
    lambda d: torch.zeros(3, device=d).expand(2, 3).add_(1),
    lambda d: torch.zeros(3, device=d).expand(2, 3).mul_(torch.ones(2, 3, device=d)),
    lambda d: torch.zeros(3, device=d).expand(2, 3).exp_(),
    lambda d: torch.zeros(3, device=d).expand(2, 3).uniform_(),
    lambda d: torch.sin(torch.ones(2, 3, device=d), out=torch.zeros(3, device=d).expand(2, 3)),
], ids=["copy_d2d", "copy_h2d", "add_", "mul_", "exp_", "uniform_", "sin_out"])
def test_writes_into_self_overlapping_memory_are_refused(write):
    _refuses_like_the_cpu(write, INTERNAL)


@pytest.mark.parametrize("name, write", [
    ("masked_fill_", lambda t: t.masked_fill_(torch.tensor([[True, False, False]] * 2, device=t.device), 1.0)),
    ("index_fill_", lambda t: t.index_fill_(1, torch.tensor([0], device=t.device), 1.0)),
    ("index_put_", lambda t: t.index_put_((torch.tensor([1], device=t.device),), torch.tensor(4.0, device=t.device),
                                          accumulate=True)),
])
def test_deprecated_writes_into_shared_memory_do_what_the_cpu_does(name, write):
    """The CPU still runs these on an expanded tensor, with a deprecation
    warning; the fallback hands the CPU kernel a host copy with the same
    sharing, so xdal warns and writes exactly what the CPU writes."""
    want = torch.arange(3.0)
    with pytest.warns(UserWarning, match=f"Use of {name} on expanded tensors is deprecated"):
        write(want.expand(2, 3))
    got = torch.arange(3.0, device="xdal")
    with pytest.warns(UserWarning, match=f"Use of {name} on expanded tensors is deprecated"):
        assert write(got.expand(2, 3)).data_ptr() == got.data_ptr()
    assert got.cpu().tolist() == want.tolist()


@pytest.mark.parametrize("shape, write", [
    ((3, 3), lambda t: t.triu_()),
    ((3, 3), lambda t: t.tril_(-1)),
    ((2, 3, 3), lambda t: t.baddbmm_(torch.ones(2, 3, 4, device=t.device), torch.ones(2, 4, 3, device=t.device))),
], ids=["triu_", "tril_", "baddbmm_"])
def test_cpu_kernels_that_accept_shared_memory_see_it_shared(shape, write):
    """Operators the CPU runs on an expanded tensor without a check (their
    result depends on the order of their writes) give the CPU's result,
    not one computed on an unshared copy."""
    want = torch.tensor([1.0, 2.0, 3.0])
    write(want.expand(shape))
    got = torch.tensor([1.0, 2.0, 3.0], device="xdal")
    write(got.expand(shape))
    assert got.cpu().tolist() == want.tolist()


def _partial(d, f):
    a = torch.arange(6.0, device=d)
    return f(a[1:], a[:-1])


@pytest.mark.parametrize("write", [
    lambda d: _partial(d, lambda dst, src: dst.copy_(src)),
    lambda d: _partial(d, lambda dst, src: dst.add_(src)),
    lambda d: _partial(d, lambda dst, src: torch.exp(src, out=dst)),
    lambda d: _partial(d, lambda dst, src: torch.maximum(src, src, out=dst)),
    lambda d: _partial(d, lambda dst, src: torch.cumsum(src, 0, out=dst)),
    lambda d: _partial(d, lambda dst, src: dst.index_copy_(0, torch.tensor([0, 1], device=d), src[2:4])),
], ids=["copy_", "add_", "exp_out", "maximum_out", "cumsum_out", "index_copy_"])
def test_writes_partially_overlapping_an_input_are_refused(write):
    _refuses_like_the_cpu(write, PARTIAL)


def test_cat_into_one_of_its_inputs_is_refused():
    def write(d):
        a = torch.zeros(4, device=d)
        torch.cat([a[:2], a[2:]], out=a)
    _refuses_like_the_cpu(write, "unsupported operation")


def test_cat_into_an_empty_input_is_refused():
    """The CPU refuses an out= that is itself one of cat's inputs, empty or
    not: the fallback hands its kernel one tensor for both."""
    def write(d):
        x = torch.zeros(0, device=d)
        torch.cat([x, torch.ones(4, 6, device=d)], dim=0, out=x)
    _refuses_like_the_cpu(write, "unsupported operation")


@pytest.mark.parametrize("view", ["conj", "neg"])
def test_writes_into_a_conjugate_or_negative_view_of_an_input(view):
    """An out= that is the conj() (or _neg_view()) of an input shares its
    memory, so the fallback mirrors both: the mirror must keep the view's
    bit, or the CPU kernel solves the unconjugated system and writes it back
    silently (solve_triangular's out=B in PyTorch's test_linalg)."""
    torch.manual_seed(0)
    a = torch.randn(4, 4, dtype=torch.complex128).triu()
    a.diagonal().add_(3)
    b = torch.randn(4, 2, dtype=torch.complex128)
    as_view = (lambda t: t.conj()) if view == "conj" else (lambda t: t._neg_view())
    want = torch.linalg.solve_triangular(a, as_view(b.clone()), upper=True)
    d = as_view(b.xdal())
    torch.linalg.solve_triangular(a.xdal(), d, upper=True, out=d)
    torch.testing.assert_close(d.cpu(), want)
    y = torch.arange(1.0, 5.0) * (1 + 2j)
    dy = as_view(y.xdal())
    torch.cumsum(dy, 0, out=dy)
    torch.testing.assert_close(dy.cpu(), torch.cumsum(as_view(y.clone()), 0))


def test_in_place_on_the_same_elements_is_allowed():
    a = make((4, 5), torch.float32)
    x = a.xdal()
    x.add_(x)
    torch.exp(x, out=x)
    x.copy_(x)
    torch.cumsum(x, 1, out=x)  # through the CPU fallback
    torch.testing.assert_close(x.cpu(), torch.cumsum(torch.exp(a + a), 1))
