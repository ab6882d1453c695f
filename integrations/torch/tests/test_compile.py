"""torch.compile on xdal tensors: Dynamo captures frames, Inductor generates
C++ kernels for the device, and they run as xdal host kernels on the
current stream (on a backend without host code, on the CPU over copies,
after a warning). What users rely on: compiled results equal eager ones
(within the tolerance of reordered float arithmetic), frames really
compiled, dynamic shapes without recompiling, graph breaks."""
import copy
import gc
import subprocess
import sys

import pytest
import torch
import torch._dynamo
import torch._inductor.metrics
import torch.nn as nn

from conftest import make

XDAL = torch.device("xdal")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch._inductor.metrics.reset()
    yield
    torch._dynamo.reset()
    gc.collect()  # compiled frames hold xdal tensors in reference cycles


def frames_compiled():
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def test_an_mlp_forward_compiles_into_kernels_of_its_own():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8), nn.LayerNorm(8)).to(XDAL)
    x = make((4, 16), torch.float32).to(XDAL)
    compiled = torch.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), rtol=1e-5, atol=1e-5)
    assert frames_compiled() == 1
    assert torch._inductor.metrics.generated_kernel_count >= 1  # C++ kernels, not only ATen calls


def test_a_conv_net_forward_and_backward_compiled_equal_eager():
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(8 * 4 * 4, 5)).to(XDAL)
    compiled_model = copy.deepcopy(eager)
    compiled = torch.compile(compiled_model)
    x = make((2, 3, 8, 8), torch.float32).to(XDAL)
    eager(x).square().sum().backward()
    compiled(x).square().sum().backward()
    assert frames_compiled() >= 1
    for a, b in zip(eager.parameters(), compiled_model.parameters()):
        torch.testing.assert_close(b.grad.cpu(), a.grad.cpu(), rtol=1e-4, atol=1e-5)


def test_a_compiled_training_step_trains_as_the_eager_one():
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(XDAL)
    trained = copy.deepcopy(eager)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_trained = torch.optim.SGD(trained.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled_step = torch.compile(step)
    for i in range(3):
        x = make((6, 8), torch.float32, seed=i).to(XDAL)
        y = torch.randint(0, 4, (6,), generator=torch.Generator().manual_seed(i)).to(XDAL)
        expected = step(eager, opt_eager, x, y)
        got = compiled_step(trained, opt_trained, x, y)
        torch.testing.assert_close(got.cpu(), expected.cpu(), rtol=1e-5, atol=1e-5)
    assert frames_compiled() >= 1
    for a, b in zip(eager.parameters(), trained.parameters()):
        torch.testing.assert_close(b.cpu(), a.cpu(), rtol=1e-4, atol=1e-5)


def test_dynamic_shapes_compile_once():
    def f(x):
        return (x.sin() * 2 + x.cos()).sum(dim=-1)

    compiled = torch.compile(f, dynamic=True)
    for n in (3, 5, 9):
        x = make((2, n), torch.float32, seed=n).to(XDAL)
        torch.testing.assert_close(compiled(x).cpu(), f(x.cpu()), rtol=1e-5, atol=1e-5)
    assert frames_compiled() == 1


def test_a_graph_break_splits_the_frame_and_both_parts_run():
    def f(x):
        y = x.exp() + 1
        torch._dynamo.graph_break()
        return (y * 3).tanh()

    x = make((5,), torch.float32).to(XDAL)
    torch.testing.assert_close(torch.compile(f)(x).cpu(), f(x.cpu()), rtol=1e-5, atol=1e-5)
    assert frames_compiled() == 2


def test_aot_eager_runs_the_traced_aten_calls():
    model = nn.Sequential(nn.Linear(6, 6), nn.Tanh()).to(XDAL)
    x = make((3, 6), torch.float32).to(XDAL)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="aot_eager")(x).cpu(), model(x).cpu())
    assert frames_compiled() == 1


@pytest.mark.skipif(not torch.xdal.runs_host_kernels(), reason="compiled kernels run over copies here")
def test_compiled_kernels_run_on_the_stream_and_capture_into_graphs():
    def f(x):
        return (x * x + 1).relu()

    compiled = torch.compile(f)
    x = make((64,), torch.float32).to(XDAL)
    compiled(x)  # compiles outside the capture
    g = torch.xdal.XdalGraph()
    with torch.xdal.graph(g):
        out = compiled(x)
    new = make((64,), torch.float32, seed=7)
    x.copy_(new)
    g.replay()
    torch.testing.assert_close(out.cpu(), f(new))


_BAD_TARGET_CHILD = """
import torch, torch.nn as nn
loss = torch.compile(lambda a, b: nn.functional.cross_entropy(a, b))
x = torch.randn(4, 3, device="xdal")
side = torch.xdal.Stream()
with torch.xdal.stream(side):
    side.wait_stream(torch.xdal.default_stream())  # x is made on the default stream
    good = torch.tensor([0, 1, 2, 1], device="xdal")
    bad = torch.tensor([0, 7, 2, 1], device="xdal")
    print("good", round(loss(x, good).item(), 4) == round(nn.functional.cross_entropy(x.cpu(), good.cpu()).item(), 4))
    try:
        loss(x, bad)  # raises here where compiled kernels run over copies
        side.synchronize()  # else the stream's error, as a GPU's device-side assert
        print("no error")
    except RuntimeError as e:
        print("raised", "index out of bounds" in str(e) and "torch.compile" in str(e))
print("others", torch.equal((x + 1).cpu(), x.cpu() + 1))
# A later failure elsewhere is reported with its own message, not the first's.
pick = torch.compile(lambda t, i: t[i] * 2)
other = torch.xdal.Stream()
with torch.xdal.stream(other):
    try:
        pick(torch.arange(5.0, device="xdal"), torch.tensor([9], device="xdal"))
        other.synchronize()
        print("no error")
    except RuntimeError as e:
        print("own", "< 5" in str(e) and "< 3" not in str(e))
"""


def test_an_index_out_of_bounds_in_a_compiled_kernel_is_an_error_not_a_crash():
    # Inductor's C++ checks indices with TORCH_CHECK, which throws: the
    # exception must become the launch's failure (a C++ exception that
    # unwinds into xdal aborts the process). Run in a child: the stream
    # that ran the kernel keeps its error, as after a GPU's device-side
    # assert, while other streams go on, and a later failure on another
    # stream is reported with its own message.
    done = subprocess.run([sys.executable, "-c", _BAD_TARGET_CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["good", "True", "raised", "True", "others", "True", "own", "True"], done.stdout


@pytest.mark.skipif(torch.xdal.runs_host_kernels(), reason="the backend runs compiled kernels on the device")
def test_without_host_code_compiled_kernels_run_over_copies_after_one_warning():
    import torch_xdal._inductor as inductor

    inductor._warned_copying = False
    x = make((16,), torch.float32).to(XDAL)
    y = x.clone()

    def f(a, b):
        b.add_(a.exp())  # written in place: copied back
        return a * 2

    with pytest.warns(UserWarning, match="runs no host code"):
        out = torch.compile(f)(x, y)
    torch.testing.assert_close(out.cpu(), x.cpu() * 2)
    torch.testing.assert_close(y.cpu(), x.cpu() + x.cpu().exp())


def test_max_pooling_on_xdal_runs_atens_kernel_and_leaves_the_cpu_to_inductor():
    # Inductor's C++ for max_pool2d_with_indices is several times slower
    # than ATen's kernel here, so on xdal the pooling (and its backward) is
    # an extern call of the ATen op; other devices keep Inductor's code.
    from torch._inductor.utils import run_and_get_code

    def step(x):
        return torch.nn.functional.max_pool2d(x.relu(), 2).sum()

    x = make((2, 3, 8, 8), torch.float32)
    for device, extern in ((XDAL, True), (torch.device("cpu"), False)):
        torch._dynamo.reset()
        xs = x.to(device).requires_grad_()
        # Compiled afresh: a graph cached from elsewhere says nothing.
        with torch._inductor.config.patch(fx_graph_cache=False), \
                torch._functorch.config.patch(enable_autograd_cache=False):
            result, code = run_and_get_code(lambda: torch.compile(step)(xs).backward() or xs.grad)
        torch.testing.assert_close(result.cpu(), torch.func.grad(step)(x), rtol=1e-5, atol=1e-6)
        source = "\n".join(code)
        assert ("aten.max_pool2d_with_indices.default" in source) == extern, device
        assert ("aten.max_pool2d_with_indices_backward.default" in source) == extern, device
