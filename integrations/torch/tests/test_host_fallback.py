"""The CPU fallback without copies: on a backend that runs host code, an
operator without an xdal kernel runs its CPU kernel as a host kernel over
the device memory, in stream order. What it must keep: the CPU's results
and layouts, the caller's order of random draws, and synchronous errors
for what depends on values."""
import warnings

import pytest
import torch
import torch.nn as nn

from conftest import make

pytestmark = pytest.mark.skipif(
    not torch.xdal.runs_host_kernels(), reason="the backend runs no host code: every fallback copies"
)


def counts():
    return torch.xdal.fallback_counts(), torch.xdal.host_fallback_counts()


def test_a_training_step_runs_its_fallbacks_as_host_kernels_with_the_cpus_results():
    torch.manual_seed(0)
    cpu = nn.Sequential(nn.Linear(30, 20), nn.ReLU(), nn.Linear(20, 5), nn.LogSoftmax(dim=1))
    dev = nn.Sequential(nn.Linear(30, 20), nn.ReLU(), nn.Linear(20, 5), nn.LogSoftmax(dim=1)).to("xdal")
    dev.load_state_dict(cpu.state_dict())
    x = make((8, 30), torch.float32)
    torch.xdal.reset_fallback_counts()
    for model, inp in ((cpu, x), (dev, x.to("xdal"))):
        model(inp).sum().backward()
    fell_back, hosted = counts()
    for op in ("aten::addmm", "aten::relu", "aten::threshold_backward", "aten::_log_softmax"):
        assert hosted.get(op, 0) >= 1 and hosted[op] == fell_back[op], (op, fell_back, hosted)
    for a, b in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(b.grad.cpu(), a.grad, rtol=1e-5, atol=1e-6)


def test_python_numbers_keep_their_place_in_type_promotion():
    """A Python number is a wrapped CPU scalar, which does not promote a
    float32 tensor to float64 as a 0-dim float64 tensor would: the host
    kernel's copy of it must stay wrapped (it did not, and the CPU kernel's
    float64 result failed the stream for every later operation)."""
    t = make((), torch.float32).abs() + 1
    d = t.to("xdal")
    torch.xdal.reset_fallback_counts()
    for f in (lambda x: torch.xlogy(x, 5), lambda x: torch.xlogy(x, 5.0), lambda x: torch.xlogy(5.0, x),
              lambda x: torch.special.xlog1py(x, 5.0)):
        got, want = f(d), f(t)
        assert got.dtype == want.dtype == torch.float32
        torch.testing.assert_close(got.cpu(), want)
    assert torch.xdal.host_fallback_counts().get("aten::xlogy.Tensor", 0) >= 1
    torch.xdal.synchronize()


def test_cpu_indices_of_float_tensors():
    """CPU index tensors reach the host-kernel path beside float operands,
    copied as they are (only a Python number is marked as one)."""
    x = make((6, 3), torch.float32)
    d = x.to("xdal")
    i = torch.tensor([4, 0, 4])
    torch.testing.assert_close(d[i].cpu(), x[i])
    y, dy = x.clone(), d.clone()
    y[i[:2]] = 2.5
    dy[i[:2]] = 2.5
    torch.testing.assert_close(dy.cpu(), y)
    torch.xdal.synchronize()


def test_in_place_results_are_the_argument_itself():
    x = make((4, 5), torch.float64)
    d = x.to("xdal")
    torch.xdal.reset_fallback_counts()
    r = torch.relu_(d)
    assert r is d
    assert torch.xdal.host_fallback_counts().get("aten::relu_", 0) == 1
    assert torch.equal(d.cpu(), torch.relu(x))


def test_results_take_the_layout_of_the_cpu_kernel():
    x = make((2, 3, 5, 4), torch.float32).contiguous(memory_format=torch.channels_last)
    ref = nn.functional.pad(x, (1, 2, 0, 1), mode="replicate")
    got = nn.functional.pad(x.to("xdal"), (1, 2, 0, 1), mode="replicate")
    assert got.stride() == ref.stride()
    assert torch.equal(got.cpu(), ref)


@pytest.mark.parametrize("f", [torch.var, torch.std, torch.var_mean, torch.std_mean], ids=lambda f: f.__name__)
def test_warnings_of_cpu_kernels_reach_the_caller(f):
    """var and std warn from their kernels (degrees of freedom <= 0), which
    their meta kernels do not: they keep the copying fallback, where the
    warning reaches the caller as on the CPU."""
    x = make((10, 20), torch.float32)
    for t in (x, x.to("xdal")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(t, dim=-1, correction=20)
        assert any("degrees of freedom is <= 0" in str(w.message) for w in caught), (t.device, caught)


def test_operands_of_other_types_keep_the_copying_fallback():
    x = make((6,), torch.int32)
    torch.xdal.reset_fallback_counts()
    torch.cumprod(x.to("xdal"), 0)
    fell_back, hosted = counts()
    assert fell_back.get("aten::cumprod", 0) == 1 and "aten::cumprod" not in hosted


def test_errors_that_depend_on_values_stay_synchronous_and_leave_the_device_usable():
    logits = make((3, 4), torch.float32).to("xdal")
    with pytest.raises((IndexError, RuntimeError), match="out of bounds|out of range"):
        nn.functional.nll_loss(logits, torch.tensor([0, 7, 1], device="xdal"))
    with pytest.raises((IndexError, RuntimeError), match="out of range"):
        torch.index_select(logits, 0, torch.tensor([5], device="xdal"))
    torch.xdal.synchronize()
    assert torch.equal(torch.relu(logits).cpu(), torch.relu(logits.cpu()))


def test_boolean_masks_run_on_the_stream_but_not_where_they_index():
    """A mask holds no index: where, masked_fill and any run as host
    kernels. Assigning through a mask checks the values' count against the
    mask's, which the CPU raises at the call: it keeps the copying path."""
    x = make((6, 5), torch.float32)
    mask = x > 0.7
    dx, dmask = x.to("xdal"), mask.to("xdal")
    torch.xdal.reset_fallback_counts()
    got = (torch.where(dmask, dx, -dx), dx.masked_fill(dmask, 2.0), dmask.any(1))
    hosted = torch.xdal.host_fallback_counts()
    for op in ("aten::where.self", "aten::masked_fill_.Scalar", "aten::any.dim"):
        assert hosted.get(op) == 1, (op, hosted)
    for g, want in zip(got, (torch.where(mask, x, -x), x.masked_fill(mask, 2.0), mask.any(1))):
        assert torch.equal(g.cpu(), want)
    values = torch.ones(int(mask.sum()) + 1)
    with pytest.raises(RuntimeError) as on_cpu:
        x.clone()[mask] = values
    with pytest.raises(RuntimeError) as on_xdal:
        dx.clone()[dmask] = values.to("xdal")
    assert str(on_xdal.value) == str(on_cpu.value)
    torch.xdal.synchronize()


def test_composite_operators_asking_with_an_empty_out_run_on_the_stream():
    """abs and logsumexp call their out= variant with an empty tensor; it is
    sized on the device first, and the CPU kernel writes it in place."""
    x = make((4, 7), torch.float32) - 0.5
    torch.xdal.reset_fallback_counts()
    got = (x.to("xdal").abs(), x.to("xdal").logsumexp(1))
    fell_back, hosted = counts()
    assert {"aten::abs.out", "aten::logsumexp.out"} <= hosted.keys() and fell_back == hosted, (fell_back, hosted)
    assert torch.equal(got[0].cpu(), x.abs())
    torch.testing.assert_close(got[1].cpu(), x.logsumexp(1))


def test_a_vector_norm_is_not_a_solver_and_runs_on_the_stream():
    # What clip_grad_norm_ computes per parameter; unlike the linalg
    # solvers, no value makes it fail.
    x = make((5, 6), torch.float32)
    torch.xdal.reset_fallback_counts()
    got = torch.linalg.vector_norm(x.to("xdal"), 2)
    assert counts()[1].get("aten::linalg_vector_norm") == 1
    torch.testing.assert_close(got.cpu(), torch.linalg.vector_norm(x, 2))


def test_random_operators_keep_the_callers_order_of_draws():
    torch.xdal.reset_fallback_counts()
    torch.manual_seed(4)
    a = nn.functional.dropout(torch.ones(64, device="xdal"), 0.5).cpu()
    torch.manual_seed(4)
    b = nn.functional.dropout(torch.ones(64, device="xdal"), 0.5).cpu()
    assert torch.equal(a, b)
    assert not any("dropout" in op for op in torch.xdal.host_fallback_counts())


def test_shape_errors_are_the_cpus_raised_at_the_call():
    a = make((3, 4), torch.float32)
    b = make((5, 6), torch.float32)
    with pytest.raises(RuntimeError) as cpu_error:
        torch.addmm(a, a, b)
    with pytest.raises(RuntimeError) as xdal_error:
        torch.addmm(a.to("xdal"), a.to("xdal"), b.to("xdal"))
    assert str(xdal_error.value) == str(cpu_error.value)


def test_a_fallback_queued_behind_work_runs_after_it_in_stream_order():
    # The host kernel reads what the native kernels before it wrote, with
    # nothing synchronized between them.
    x = make((256, 256), torch.float32)
    d = x.to("xdal")
    for _ in range(3):
        d = d @ d.t() / 256 + 1  # native: matmul, mul, add
        x = x @ x.t() / 256 + 1
    torch.xdal.reset_fallback_counts()
    got = torch.tanh(torch.erfinv(torch.sigmoid(d) * 0.5))  # erfinv: a fallback
    assert torch.xdal.host_fallback_counts().get("aten::erfinv", 0) == 1
    torch.testing.assert_close(got.cpu(), torch.tanh(torch.erfinv(torch.sigmoid(x) * 0.5)), rtol=1e-4, atol=1e-5)


def test_results_written_in_place_by_out_variants_or_copied_when_those_resize():
    # addmm.out writes its result in place; mse_loss.out resizes its out
    # first, so mse_loss's result is the CPU kernel's own, copied.
    a, b, c = make((4, 6), torch.float32), make((6, 3), torch.float32), make((4, 3), torch.float32)
    torch.xdal.reset_fallback_counts()
    got = torch.addmm(c.to("xdal"), a.to("xdal"), b.to("xdal"), beta=0.5, alpha=2)
    loss = nn.functional.mse_loss(a.to("xdal"), a.to("xdal") * 0.5)
    hosted = torch.xdal.host_fallback_counts()
    assert hosted.get("aten::addmm", 0) == 1 and hosted.get("aten::mse_loss", 0) == 1, hosted
    assert torch.equal(got.cpu(), torch.addmm(c, a, b, beta=0.5, alpha=2))
    assert torch.equal(loss.cpu(), nn.functional.mse_loss(a, a * 0.5))


def test_an_out_variant_that_computes_otherwise_than_the_functional_kernel_is_not_used():
    # torch 2.15's native_batch_norm.out gives garbage for a non-contiguous
    # input where native_batch_norm is right; the host kernel must give the
    # functional kernel's results.
    def strided(t):
        r = torch.empty(t.shape + (2,), dtype=t.dtype, device=t.device)[..., 0]
        r.copy_(t)
        return r

    x, mean, var = make((5, 5, 5), torch.float32), make((5,), torch.float32, seed=1), make((5,), torch.float32, seed=2).abs()
    cpu = [strided(t.clone()) for t in (x, mean, var)]
    dev = [strided(t.to("xdal")) for t in (x, mean, var)]
    expected = torch.native_batch_norm(cpu[0], None, None, cpu[1], cpu[2], True, 0.5, 0.6)
    torch.xdal.reset_fallback_counts()
    got = torch.native_batch_norm(dev[0], None, None, dev[1], dev[2], True, 0.5, 0.6)
    assert torch.xdal.host_fallback_counts().get("aten::native_batch_norm", 0) == 1
    for g, e in zip(got, expected):
        assert torch.equal(g.cpu(), e)
    assert torch.equal(dev[1].cpu(), cpu[1]) and torch.equal(dev[2].cpu(), cpu[2])  # running statistics


def test_out_arguments_of_the_right_layout_are_written_by_the_host_kernel():
    # What torch.compile's extern kernels call: out= tensors allocated at
    # the result's shape. An empty one (how composite operators such as abs
    # ask for a result) is sized beforehand, on the device; one of another
    # shape with elements is resized as the CPU does, with its warning,
    # through the copying fallback (a kernel cannot reallocate device memory).
    a, b, c = make((4, 6), torch.float32), make((6, 3), torch.float32), make((4, 3), torch.float32)
    out = torch.empty(4, 3, device="xdal")
    addr = out.data_ptr()
    torch.xdal.reset_fallback_counts()
    r = torch.addmm(c.to("xdal"), a.to("xdal"), b.to("xdal"), beta=0.5, out=out)
    assert r is out and out.data_ptr() == addr
    assert torch.xdal.host_fallback_counts().get("aten::addmm.out", 0) == 1
    assert torch.equal(out.cpu(), torch.addmm(c, a, b, beta=0.5))
    empty = torch.empty(0, device="xdal")
    torch.xdal.reset_fallback_counts()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized without a word, as on the CPU
        torch.addmm(c.to("xdal"), a.to("xdal"), b.to("xdal"), out=empty)
    assert counts()[1].get("aten::addmm.out", 0) == 1
    assert empty.shape == (4, 3) and torch.equal(empty.cpu(), torch.addmm(c, a, b))
    wrong = torch.empty(2, 2, device="xdal")
    torch.xdal.reset_fallback_counts()
    with pytest.warns(UserWarning, match="was resized"):
        torch.addmm(c.to("xdal"), a.to("xdal"), b.to("xdal"), out=wrong)
    fell_back, hosted = counts()
    assert fell_back.get("aten::addmm.out", 0) == 1 and "aten::addmm.out" not in hosted
    assert wrong.shape == (4, 3) and torch.equal(wrong.cpu(), torch.addmm(c, a, b))
    loss = torch.empty((), device="xdal")
    torch.xdal.reset_fallback_counts()
    torch.ops.aten.mse_loss.out(a.to("xdal"), a.to("xdal") * 0.5, out=loss)
    assert "aten::mse_loss.out" not in torch.xdal.host_fallback_counts()  # its CPU kernel resizes its out
    assert torch.equal(loss.cpu(), nn.functional.mse_loss(a, a * 0.5))


def test_convolutions_run_as_host_kernels_with_the_cpus_results_step_after_step():
    # oneDNN's temporaries come from the host kernels' scratch cache, which
    # hands the same blocks out again on every step.
    torch.manual_seed(1)
    cpu = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 8 * 8, 4))
    dev = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 8 * 8, 4))
    dev = dev.to("xdal")
    dev.load_state_dict(cpu.state_dict())
    x = make((16, 3, 16, 16), torch.float32)
    torch.xdal.reset_fallback_counts()
    for step in range(3):
        for model, inp in ((cpu, x), (dev, x.to("xdal"))):
            model.zero_grad()
            model(inp).square().sum().backward()
        for a, b in zip(cpu.parameters(), dev.parameters()):
            torch.testing.assert_close(b.grad.cpu(), a.grad, rtol=1e-4, atol=1e-5, msg=f"step {step}")
    hosted = torch.xdal.host_fallback_counts()
    assert hosted.get("aten::convolution_overrideable") == 3, hosted
    assert hosted.get("aten::convolution_backward_overrideable") == 3, hosted


def test_assertions_and_value_checks_stay_at_the_call():
    # Operators that only check (no result, nothing written) and float
    # operators that refuse values keep the CPU's synchronous errors, and
    # the stream stays usable after them.
    zero = torch.zeros((), device="xdal")
    with pytest.raises(RuntimeError):
        torch._assert_async(zero)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        nn.functional.binary_cross_entropy(torch.full((3,), 2.0, device="xdal"), torch.ones(3, device="xdal"))
    with pytest.raises(RuntimeError, match="not finite"):
        torch.histc(torch.tensor([1.0, float("inf")], device="xdal"))
    torch.xdal.synchronize()
    x = make((5,), torch.float32)
    assert torch.equal(torch.sigmoid(x.to("xdal")).cpu(), torch.sigmoid(x))
