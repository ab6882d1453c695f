"""Graph mode: torch.accelerator.Graph and torch.xdal.XdalGraph / graph over
xdal's stream capture. What users of CUDA graphs rely on: replays compute
what eager code computes, over the tensors the capture allocated (same
addresses every replay), from a memory pool of the graph's own that eager
code never gets; graphs may share a pool; what cannot be captured raises,
names the operator, invalidates the capture and leaves xdal usable."""
import copy

import pytest
import torch
import torch.nn as nn

from conftest import make

XDAL = torch.device("xdal")

needs_host_kernels = pytest.mark.skipif(
    not torch.xdal.runs_host_kernels(),
    reason="operators without an xdal kernel run through CPU copies here, which no capture takes",
)


def side_stream():
    s = torch.Stream(device=XDAL)
    s.wait_stream(torch.xdal.current_stream())
    return s


def test_a_captured_computation_replays_over_new_inputs():
    x = make((16,), torch.float32).to(XDAL)
    w = make((16, 16), torch.float32, seed=1).to(XDAL)
    g = torch.xdal.XdalGraph()
    with torch.xdal.graph(g):
        y = (x * 2 + x) @ w
        y.add_(1)
    for seed in (2, 3):
        new = make((16,), torch.float32, seed=seed)
        x.copy_(new)
        g.replay()
        torch.testing.assert_close(y.cpu(), (new * 2 + new) @ w.cpu() + 1)


def test_replays_run_in_order_many_times_and_on_any_stream():
    x = torch.zeros(64, device=XDAL)
    g = torch.accelerator.Graph()
    with side_stream(), g:
        x.add_(1)
    assert torch.equal(x.cpu(), torch.zeros(64))  # captured, not run
    for _ in range(100):
        g.replay()
    other = torch.Stream(device=XDAL)
    with torch.xdal.stream(other):
        other.wait_stream(torch.xdal.default_stream())
        g.replay()
    torch.xdal.synchronize()
    assert torch.equal(x.cpu(), torch.full((64,), 101.0))


def test_while_capturing_the_stream_says_so():
    assert not torch.xdal.is_current_stream_capturing()
    seen = []
    with torch.xdal.graph(torch.xdal.XdalGraph()):
        seen.append(torch.xdal.is_current_stream_capturing())
    assert seen == [True]
    assert not torch.xdal.is_current_stream_capturing()


@needs_host_kernels
def test_an_mlp_forward_replays_as_eager_computes_it():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 5)).to(XDAL)
    static_in = torch.randn(4, 20, device=XDAL)
    g = torch.accelerator.Graph()
    with torch.no_grad():
        with side_stream(), g:
            static_out = model(static_in)
        for seed in range(3):
            new = make((4, 20), torch.float32, seed=seed)
            static_in.copy_(new)
            g.replay()
            assert torch.equal(static_out.cpu(), model(new.to(XDAL)).cpu())


@needs_host_kernels
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_whole_training_step_replays_as_eager_steps(optimizer):
    torch.manual_seed(0)
    captured = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(XDAL)
    eager = copy.deepcopy(captured)

    def make_optimizer(model):
        if optimizer == "sgd":
            return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return torch.optim.Adam(model.parameters(), lr=0.01, capturable=True)

    opt_captured, opt_eager = make_optimizer(captured), make_optimizer(eager)
    loss_fn = nn.MSELoss()
    batches = [(make((5, 8), torch.float32, seed=i), make((5, 4), torch.float32, seed=100 + i)) for i in range(7)]

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    # Warm-up outside the capture (optimizer state, gradients' layouts).
    s = side_stream()
    with torch.xdal.stream(s):
        for x, y in batches[:2]:
            step(captured, opt_captured, x.to(XDAL), y.to(XDAL))
            step(eager, opt_eager, x.to(XDAL), y.to(XDAL))
    torch.xdal.current_stream().wait_stream(s)

    static_x, static_y = torch.empty(5, 8, device=XDAL), torch.empty(5, 4, device=XDAL)
    g = torch.xdal.XdalGraph()
    opt_captured.zero_grad(set_to_none=True)
    with torch.xdal.graph(g):
        static_loss = loss_fn(captured(static_x), static_y)
        static_loss.backward()
        opt_captured.step()
    for x, y in batches[2:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        expected = step(eager, opt_eager, x.to(XDAL), y.to(XDAL))
        assert torch.equal(static_loss.cpu(), expected.cpu())
    for a, b in zip(captured.parameters(), eager.parameters()):
        assert torch.equal(a.cpu(), b.cpu())


def test_replays_reuse_the_captures_addresses_and_eager_code_never_gets_them():
    x = torch.ones(256, device=XDAL)
    g = torch.xdal.XdalGraph()
    with torch.xdal.graph(g):
        tmp = torch.empty(256, device=XDAL)
        freed = tmp.data_ptr()
        del tmp
        again = torch.empty(256, device=XDAL)  # a block freed in the capture is reused in it
        reused = again.data_ptr()
        again.copy_(x)
        out = again * 2
    assert reused == freed
    addr = out.data_ptr()
    g.replay()
    assert out.data_ptr() == addr and torch.equal(out.cpu(), torch.full((256,), 2.0))
    del out, again
    eager = [torch.empty(256, device=XDAL) for _ in range(8)]
    assert freed not in {t.data_ptr() for t in eager}


def test_a_capture_that_frees_and_allocates_does_not_grow():
    x = torch.ones(4096, device=XDAL)

    def device_bytes():
        return torch.xdal.xdal_mem_stats()["allocated_bytes"]

    def capture(steps):
        g = torch.xdal.XdalGraph()
        before = device_bytes()
        with torch.xdal.graph(g):
            y = x
            for _ in range(steps):
                y = y * 1.5 + 1
        return g, y, device_bytes() - before

    g1, y1, one = capture(1)
    g50, y50, fifty = capture(50)
    assert fifty <= one + 4 * 4096 * 4, (one, fifty)
    g50.replay()
    expected = torch.ones(4096)
    for _ in range(50):
        expected = expected * 1.5 + 1
    assert torch.equal(y50.cpu(), expected)


def test_two_graphs_share_a_memory_pool():
    def device_bytes():
        return torch.xdal.xdal_mem_stats()["allocated_bytes"]

    pool = torch.xdal.graph_pool_handle()
    x = torch.ones(128, device=XDAL)
    g1, g2, apart = torch.xdal.XdalGraph(), torch.xdal.XdalGraph(), torch.xdal.XdalGraph()
    with torch.xdal.graph(g1, pool=pool):
        y1 = x * 2
        scratch = x + 1
        del scratch  # a free block of the pool
    before = device_bytes()
    with torch.xdal.graph(g2, pool=g1.pool()):
        y2 = torch.empty(128, device=XDAL)  # g1's freed block, now g2's
        y2.fill_(5)
        y2.mul_(x)
    assert device_bytes() == before
    with torch.xdal.graph(apart):
        y3 = torch.empty(128, device=XDAL)  # a pool of its own
        y3.fill_(7)
    assert device_bytes() > before
    assert g1.pool() == g2.pool() == pool and apart.pool() != pool
    x.fill_(3)
    g1.replay()
    g2.replay()
    apart.replay()
    assert torch.equal(y1.cpu(), torch.full((128,), 6.0))
    assert torch.equal(y2.cpu(), torch.full((128,), 15.0))
    assert torch.equal(y3.cpu(), torch.full((128,), 7.0))


def test_pinned_host_memory_a_capture_copies_lives_as_long_as_the_graph():
    src = torch.arange(64, dtype=torch.float32).pin_memory()
    dst = torch.empty(64, device=XDAL)
    g = torch.xdal.XdalGraph()
    with torch.xdal.graph(g):
        dst.copy_(src, non_blocking=True)  # read at every replay
        out = dst * 2
    src.add_(100)
    address = src.data_ptr()
    g.replay()
    assert torch.equal(out.cpu(), (torch.arange(64, dtype=torch.float32) + 100) * 2)
    del src
    others = [torch.empty(64, dtype=torch.float32).pin_memory() for _ in range(4)]
    assert address not in {t.data_ptr() for t in others}  # still the graph's
    g.replay()


def test_a_reset_graph_gives_its_memory_back_and_captures_again():
    x = torch.ones(1 << 16, device=XDAL)
    torch.xdal.synchronize()
    before = torch.xdal.memory_allocated()
    g = torch.xdal.XdalGraph()
    with torch.xdal.graph(g):
        y = x * 2
    assert torch.xdal.memory_allocated() > before
    del y
    g.reset()
    torch.xdal.synchronize()
    assert torch.xdal.memory_allocated() == before
    with torch.xdal.graph(g):
        y = x + 5
    g.replay()
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 6.0))


def test_keep_graph_instantiates_on_demand_and_dumps_dot(tmp_path):
    x = torch.ones(8, device=XDAL)
    g = torch.accelerator.Graph(keep_graph=True)
    with side_stream(), g:
        x.mul_(2)
        x.add_(1)
    path = tmp_path / "graph.dot"
    g.debug_dump(str(path))
    dot = path.read_text()
    assert dot.startswith("digraph") and dot.count("->") >= 1
    g.replay()  # instantiates first
    with pytest.raises(RuntimeError, match="already instantiated"):
        g.instantiate()
    assert torch.equal(x.cpu(), torch.full((8,), 3.0))


def test_debug_dump_needs_debug_mode_or_a_kept_graph(tmp_path):
    x = torch.ones(8, device=XDAL)
    plain = torch.xdal.XdalGraph()
    with torch.xdal.graph(plain):
        x.add_(1)
    with pytest.raises(RuntimeError, match="enable_debug_mode"):
        plain.debug_dump(str(tmp_path / "g.dot"))
    debug = torch.xdal.XdalGraph()
    debug.enable_debug_mode()
    with torch.xdal.graph(debug):
        x.add_(1)
    debug.debug_dump(str(tmp_path / "g.dot"))
    assert "digraph" in (tmp_path / "g.dot").read_text()
    with pytest.raises(RuntimeError, match="INVALID_VALUE"):
        debug.debug_dump(str(tmp_path / "no" / "such" / "dir.dot"))


@pytest.mark.parametrize(
    "what, names",
    [
        ("item", "aten::_local_scalar_dense"),
        ("cpu", "aten::_copy_from"),
        ("nonzero", "aten::nonzero"),
        ("synchronize", "xdal_device_synchronize"),
        ("stream.synchronize", "xdal_stream_synchronize"),
    ],
)
def test_what_cannot_be_captured_raises_names_itself_and_leaves_xdal_usable(what, names):
    x = torch.arange(8, device=XDAL, dtype=torch.float32)
    actions = {
        "item": lambda y: y.sum().item(),
        "cpu": lambda y: y.cpu(),
        "nonzero": lambda y: torch.nonzero(y),
        "synchronize": lambda y: torch.xdal.synchronize(),
        "stream.synchronize": lambda y: torch.xdal.current_stream().synchronize(),
    }
    g = torch.xdal.XdalGraph()
    s = side_stream()
    with torch.xdal.stream(s):
        g.capture_begin()
        y = x * 2
        with pytest.raises(RuntimeError, match=names.replace(".", r"\.")) as raised:
            actions[what](y)
        assert "CAPTURE_UNSUPPORTED" in str(raised.value)
        # The capture is broken: ending it says so and leaves nothing to replay.
        with pytest.raises(RuntimeError, match="CAPTURE_INVALIDATED"):
            g.capture_end()
        with pytest.raises(RuntimeError, match="needs a captured graph"):
            g.replay()
    assert not torch.xdal.is_current_stream_capturing()
    assert torch.equal((x + 1).cpu(), torch.arange(1, 9, dtype=torch.float32))
    with torch.xdal.graph(g):
        z = x * 3
    g.replay()
    assert torch.equal(z.cpu(), torch.arange(8, dtype=torch.float32) * 3)


def test_a_graph_dropped_while_capturing_ends_the_capture():
    x = torch.ones(8, device=XDAL)
    s = side_stream()
    with torch.xdal.stream(s):
        g = torch.xdal.XdalGraph()
        g.capture_begin()
        x.add_(1)  # recorded, never run
        del g
        assert not torch.xdal.is_current_stream_capturing()
        x.add_(2)  # runs
    torch.xdal.synchronize()
    assert torch.equal(x.cpu(), torch.full((8,), 3.0))


def test_the_default_stream_is_refused_and_the_graph_stays_usable():
    g = torch.accelerator.Graph()
    with pytest.raises(RuntimeError, match="other than the default stream"):
        with torch.xdal.stream(torch.xdal.default_stream()):
            g.capture_begin()
    assert not torch.xdal.is_current_stream_capturing()
    x = torch.ones(4, device=XDAL)
    with side_stream(), g:
        x.add_(1)
    g.replay()
    assert torch.equal(x.cpu(), torch.full((4,), 2.0))


@pytest.mark.parametrize("mode", ["default", "global", "thread_local", "relaxed"])
def test_every_capture_mode_captures(mode):
    x = torch.ones(4, device=XDAL)
    g = torch.accelerator.Graph(capture_error_mode=mode)
    with side_stream(), g:
        x.mul_(3)
    g.replay()
    assert torch.equal(x.cpu(), torch.full((4,), 3.0))


def test_capture_begin_twice_and_end_without_begin_are_refused():
    g = torch.xdal.XdalGraph()
    with pytest.raises(RuntimeError, match="without capture_begin"):
        g.capture_end()
    x = torch.ones(4, device=XDAL)
    with torch.xdal.graph(g):
        x.add_(1)
    with pytest.raises(RuntimeError, match="already holds a capture"):
        with torch.xdal.graph(g):
            pass
    g.replay()
    assert torch.equal(x.cpu(), torch.full((4,), 2.0))
