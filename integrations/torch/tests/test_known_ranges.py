"""Operators over integer indices whose values xdal knows: class targets
and embedding ids copied from the host (known from the copy), max pooling's
indices (bounded by the kernel that wrote them). Such operators check the
indices at the call, as the CPU does, and run on the stream without waiting
for it; indices of unknown values keep the copying fallback, whose CPU
kernel checks them at the call too."""
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from conftest import make

pytestmark = pytest.mark.skipif(
    not torch.xdal.runs_host_kernels(), reason="the backend runs no host code: every fallback copies"
)

NLL = ("aten::nll_loss_forward", "aten::nll_loss_backward")
NLL2D = ("aten::nll_loss2d_forward", "aten::nll_loss2d_backward")


def losses_on_both(logits, target, **kwargs):
    """cross_entropy and its input's gradient on the CPU and on xdal, with
    the fallback counts of the xdal call."""
    results = []
    torch.xdal.reset_fallback_counts()
    for device in ("cpu", "xdal"):
        x = logits.detach().to(device).requires_grad_()
        loss = F.cross_entropy(x, target.to(device), **kwargs)
        loss.backward()
        results.append((loss.detach().cpu(), x.grad.cpu()))
    return results, torch.xdal.fallback_counts(), torch.xdal.host_fallback_counts()


@pytest.mark.parametrize("shape, ops", [((16, 5), NLL), ((2, 5, 3, 4), NLL2D)], ids=["nll_loss", "nll_loss2d"])
def test_targets_copied_from_the_host_run_the_loss_on_the_stream(shape, ops):
    logits = make(shape, torch.float32)
    target = torch.randint(0, shape[1], (shape[0],) + shape[2:], generator=torch.Generator().manual_seed(3))
    (cpu, dev), fell_back, hosted = losses_on_both(logits, target)
    for op in ops:
        assert hosted.get(op) == 1 and fell_back.get(op) == 1, (op, fell_back, hosted)
    torch.testing.assert_close(dev[0], cpu[0])
    torch.testing.assert_close(dev[1], cpu[1])


@pytest.mark.parametrize("bad", [4, -1, 100])
def test_an_out_of_range_target_is_the_cpus_error_at_the_call(bad):
    logits = make((3, 4), torch.float32)
    target = torch.tensor([0, bad, 1])
    with pytest.raises(IndexError) as on_cpu:
        F.cross_entropy(logits, target)
    with pytest.raises(IndexError) as on_xdal:
        F.cross_entropy(logits.to("xdal"), target.to("xdal"))
    assert str(on_xdal.value) == str(on_cpu.value)
    torch.xdal.synchronize()  # nothing failed on the stream
    assert torch.equal((logits.to("xdal") * 2).cpu(), logits * 2)


@pytest.mark.parametrize(
    "write",
    [lambda y: y.__setitem__(1, 9), lambda y: y.add_(7), lambda y: y[1:].copy_(torch.tensor([9, 9]))],
    ids=["setitem", "add_", "copy_"],
)
def test_a_target_written_since_its_copy_is_checked_again_at_the_call(write):
    logits = make((3, 4), torch.float32).to("xdal")
    target = torch.tensor([0, 2, 1]).to("xdal")
    F.cross_entropy(logits, target)  # in range: on the stream
    write(target)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(logits, target)
    torch.xdal.synchronize()


def test_targets_computed_on_the_device_keep_the_copying_fallback():
    logits = make((8, 5), torch.float32)
    target = (logits * -1).to("xdal").argmax(1)
    torch.xdal.reset_fallback_counts()
    got = F.cross_entropy(logits.to("xdal"), target)
    assert torch.xdal.fallback_counts().get("aten::nll_loss_forward") == 1
    assert "aten::nll_loss_forward" not in torch.xdal.host_fallback_counts()
    torch.testing.assert_close(got.cpu(), F.cross_entropy(logits, target.cpu()))


def test_ignored_targets_keep_the_copying_fallback():
    """-100 (ignore_index) is out of the class range: the range cannot tell
    an ignored target from a bad one, and the CPU kernel decides."""
    logits = make((8, 5), torch.float32)
    target = torch.tensor([0, -100, 4, 1, -100, 2, 3, 0])
    (cpu, dev), fell_back, hosted = losses_on_both(logits, target)
    assert fell_back.get("aten::nll_loss_forward") == 1 and "aten::nll_loss_forward" not in hosted
    torch.testing.assert_close(dev[0], cpu[0])
    torch.testing.assert_close(dev[1], cpu[1])


_STALE_CHILD = """
import torch, torch.nn.functional as F
logits = torch.randn(3, 4).to("xdal")
target = torch.tensor([0, 2, 1]).to("xdal")
version = target._version
target.data[1] = 9  # through .data: the target's version counter does not move
print("unmoved", target._version == version)
side = torch.xdal.Stream()
with torch.xdal.stream(side):
    side.wait_stream(torch.xdal.default_stream())
    F.cross_entropy(logits, target)
    try:
        side.synchronize()
        print("no error")
    except RuntimeError as e:
        print("failed", "out of bounds" in str(e))
print("others", torch.equal((logits + 1).cpu(), logits.cpu() + 1))
"""


def test_a_target_changed_behind_its_version_counter_fails_the_stream_not_the_values():
    """A write through `.data` is not seen: the range known from the copy is
    stale. The CPU kernel still checks every target as it runs, so the
    stream fails at its next synchronization with the kernel's message, as
    after a GPU's device-side assert, and other streams go on. In a child:
    the stream keeps its error."""
    done = subprocess.run([sys.executable, "-c", _STALE_CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["unmoved", "True", "failed", "True", "others", "True"], done.stdout


def test_embedding_ids_copied_from_the_host_run_forward_and_backward_on_the_stream():
    torch.manual_seed(0)
    cpu = torch.nn.Embedding(20, 6)
    dev = torch.nn.Embedding(20, 6).to("xdal")
    dev.load_state_dict(cpu.state_dict())
    ids = torch.tensor([[3, 19, 0], [7, 7, 12]])
    torch.xdal.reset_fallback_counts()
    for model, i in ((cpu, ids), (dev, ids.to("xdal"))):
        (model(i) * torch.arange(6.0, device=i.device)).sum().backward()
    hosted = torch.xdal.host_fallback_counts()
    assert hosted.get("aten::index_select") == 1 and hosted.get("aten::embedding_dense_backward") == 1, hosted
    torch.testing.assert_close(dev.weight.grad.cpu(), cpu.weight.grad)


def test_an_embedding_id_out_of_range_is_the_cpus_error_at_the_call():
    weight = make((5, 3), torch.float32)
    ids = torch.tensor([1, 5])
    with pytest.raises(IndexError) as on_cpu:
        F.embedding(ids, weight)
    with pytest.raises(IndexError) as on_xdal:
        F.embedding(ids.to("xdal"), weight.to("xdal"))
    assert str(on_xdal.value) == str(on_cpu.value)
    torch.xdal.synchronize()


def test_max_pooling_indices_are_known_to_its_backward():
    """The forward's indices lie in the input's plane by construction: the
    backward takes them on the stream. Indices written since (here in place,
    by an operator) take the copying path, which gives the CPU's result."""
    x = make((2, 3, 8, 8), torch.float32)
    cpu_x, dev_x = x.clone().requires_grad_(), x.to("xdal").requires_grad_()
    torch.xdal.reset_fallback_counts()
    for t in (cpu_x, dev_x):
        F.max_pool2d(t, 2).pow(2).sum().backward()
    hosted = torch.xdal.host_fallback_counts()
    assert hosted.get("aten::max_pool2d_with_indices_backward") == 1, hosted
    torch.testing.assert_close(dev_x.grad.cpu(), cpu_x.grad)

    out, indices = torch.ops.aten.max_pool2d_with_indices(x.to("xdal"), [2, 2])
    indices.add_(0)  # written: the range known from the forward no longer holds
    grad = torch.ones_like(out)
    torch.xdal.reset_fallback_counts()
    got = torch.ops.aten.max_pool2d_with_indices_backward(grad, x.to("xdal"), [2, 2], [2, 2], [0, 0], [1, 1], False,
                                                          indices)
    assert "aten::max_pool2d_with_indices_backward" not in torch.xdal.host_fallback_counts()
    ref_out, ref_indices = torch.ops.aten.max_pool2d_with_indices(x, [2, 2])
    want = torch.ops.aten.max_pool2d_with_indices_backward(torch.ones_like(ref_out), x, [2, 2], [2, 2], [0, 0], [1, 1],
                                                           False, ref_indices)
    assert torch.equal(got.cpu(), want)


def test_targets_used_at_every_step_stay_known_whatever_else_is_noted():
    """Ranges are kept for 32 tensors: one of a tensor that is gone is
    replaced first (max pooling notes new indices at every step), then the
    one least recently noted or used, so a training loop's targets stay."""
    logits = make((4, 3), torch.float32).to("xdal")
    target = torch.tensor([0, 2, 1, 1]).to("xdal")
    image = make((1, 1, 4, 4), torch.float32).to("xdal")
    kept = []
    for step in range(40):
        F.max_pool2d(image, 2, return_indices=True)  # indices noted, then freed
        kept.append(torch.tensor([step]).to("xdal"))  # small copies that stay alive
        torch.xdal.reset_fallback_counts()
        F.cross_entropy(logits, target)
        assert torch.xdal.host_fallback_counts().get("aten::nll_loss_forward") == 1, step


def test_gather_scatter_and_index_writes_take_copied_indices_on_the_stream():
    x = make((4, 5), torch.float32)
    ids = torch.tensor([1, 0, 4, 2])
    cases = {
        "aten::gather": lambda t, i: t.gather(1, i.unsqueeze(1)),
        "aten::scatter_.value": lambda t, i: torch.zeros_like(t).scatter_(1, i.unsqueeze(1), 1.0),  # one-hot
        "aten::scatter_add_": lambda t, i: torch.zeros_like(t).scatter_add_(1, i.unsqueeze(1), t),
        "aten::index_add_": lambda t, i: torch.zeros(5, 5, device=t.device).index_add_(0, i, t),
        "aten::index_copy_": lambda t, i: torch.zeros(5, 5, device=t.device).index_copy_(0, i, t),
    }
    for op, f in cases.items():
        torch.xdal.reset_fallback_counts()
        got = f(x.to("xdal"), ids.to("xdal"))
        assert torch.xdal.host_fallback_counts().get(op) == 1, (op, torch.xdal.host_fallback_counts())
        assert torch.equal(got.cpu(), f(x, ids)), op
    bad = torch.tensor([1, 0, 5, 2])
    with pytest.raises(RuntimeError) as on_cpu:
        x.gather(1, bad.unsqueeze(1))
    with pytest.raises(RuntimeError) as on_xdal:
        x.to("xdal").gather(1, bad.to("xdal").unsqueeze(1))
    assert str(on_xdal.value) == str(on_cpu.value)
    torch.xdal.synchronize()
