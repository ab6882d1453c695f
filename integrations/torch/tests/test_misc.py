"""Random generators, two devices, autograd, serialization."""
import io

import pytest
import torch


def test_manual_seed_reproducible():
    torch.manual_seed(123)
    a = torch.randn(100, device="xdal").cpu()
    b = torch.rand(10, device="xdal").cpu()
    torch.manual_seed(123)
    assert torch.equal(torch.randn(100, device="xdal").cpu(), a)
    assert torch.equal(torch.rand(10, device="xdal").cpu(), b)
    # an xdal generator seeded like the CPU one draws the same numbers
    torch.manual_seed(123)
    assert torch.equal(torch.randn(100), a)


def test_generators_are_per_device():
    torch.manual_seed(7)
    a0 = torch.randn(10, device="xdal:0").cpu()
    a1 = torch.randn(10, device="xdal:1").cpu()
    assert torch.equal(a0, a1)  # same seed on both devices, independent streams of numbers
    b0 = torch.randn(10, device="xdal:0").cpu()
    assert not torch.equal(a0, b0)
    torch.xdal.manual_seed(1)  # only the current device
    torch.xdal.default_generator(1).manual_seed(2)
    assert torch.xdal.default_generator(0).initial_seed() == 1
    assert torch.xdal.default_generator(1).initial_seed() == 2


def test_explicit_generator_and_state():
    g = torch.Generator(device="xdal")
    assert g.device.type == "xdal"
    g.manual_seed(5)
    a = torch.randn(20, device="xdal", generator=g).cpu()
    g.manual_seed(5)
    assert torch.equal(torch.randn(20, device="xdal", generator=g).cpu(), a)
    state = torch.xdal.get_rng_state()
    x = torch.rand(5, device="xdal").cpu()
    torch.xdal.set_rng_state(state)
    assert torch.equal(torch.rand(5, device="xdal").cpu(), x)
    torch.manual_seed(3)
    p = torch.randperm(10, device="xdal").cpu()
    torch.manual_seed(3)
    assert torch.equal(torch.randperm(10, device="xdal").cpu(), p)
    torch.manual_seed(4)
    d1 = torch.nn.functional.dropout(torch.ones(50, device="xdal"), 0.5).cpu()
    torch.manual_seed(4)
    assert torch.equal(torch.nn.functional.dropout(torch.ones(50, device="xdal"), 0.5).cpu(), d1)


def test_two_devices():
    a = torch.arange(12.0).reshape(3, 4).to("xdal:0")
    b = a.to("xdal:1")
    assert b.device.index == 1
    c = (b @ b.t()).to("xdal:0")
    assert torch.equal(c.cpu(), a.cpu() @ a.cpu().t())
    with torch.xdal.device(1):
        d = torch.ones(3, device="xdal")
        assert d.device.index == 1
    with pytest.raises(RuntimeError):
        _ = a + b  # tensors on different devices


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 32)
        self.l2 = torch.nn.Linear(32, 16)
        self.l3 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.l3(torch.relu(self.l2(torch.tanh(self.l1(x)))))


def _train(device, steps=8):
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(64, 8)
    y = torch.randint(0, 3, (64,))
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}


def test_autograd_mlp_matches_cpu():
    cpu_losses, cpu_state = _train("cpu")
    x_losses, x_state = _train("xdal")
    torch.testing.assert_close(torch.tensor(x_losses), torch.tensor(cpu_losses), rtol=1e-4, atol=1e-5)
    for k in cpu_state:
        torch.testing.assert_close(x_state[k], cpu_state[k], rtol=1e-4, atol=1e-5)
    assert x_losses[-1] < x_losses[0]


def test_adam_and_grad_accumulation():
    w = torch.randn(5, 5, requires_grad=True)
    wx = w.detach().xdal().requires_grad_()
    for t in (w, wx):
        opt = torch.optim.Adam([t], lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            (t @ t).sum().backward()
            opt.step()
    torch.testing.assert_close(wx.detach().cpu(), w.detach(), rtol=1e-5, atol=1e-5)


def test_save_and_load():
    x = torch.randn(4, 5).xdal()
    y = torch.arange(6, dtype=torch.int32).to("xdal:1")
    buf = io.BytesIO()
    torch.save({"x": x, "y": y, "view": x[1:3]}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["x"].device == torch.device("xdal:0") and torch.equal(loaded["x"].cpu(), x.cpu())
    assert loaded["y"].device == torch.device("xdal:1") and torch.equal(loaded["y"].cpu(), y.cpu())
    assert torch.equal(loaded["view"].cpu(), x.cpu()[1:3])
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    assert on_cpu["x"].device.type == "cpu"
    cbuf = io.BytesIO()
    torch.save(x.cpu(), cbuf)
    cbuf.seek(0)
    moved = torch.load(cbuf, map_location="xdal")
    assert moved.device.type == "xdal" and torch.equal(moved.cpu(), x.cpu())
    cbuf.seek(0)
    moved1 = torch.load(cbuf, map_location="xdal:1")
    assert moved1.device == torch.device("xdal:1")


def test_module_state_dict_round_trip():
    m = torch.nn.Linear(3, 2).xdal()
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = torch.nn.Linear(3, 2).xdal()
    m2.load_state_dict(torch.load(buf))
    assert torch.equal(m2.weight.cpu(), m.weight.cpu())


def test_printing():
    s = repr(torch.tensor([1.5, 2.0]).xdal())
    assert "device='xdal:0'" in s and "1.5000" in s


def test_conv_net_forward_backward_matches_cpu():
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 2))
    x = torch.randn(2, 3, 8, 8)
    ref_out = net(x)
    ref_out.sum().backward()
    ref_grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    xnet = net.to("xdal")
    out = xnet(x.to("xdal"))
    out.sum().backward()
    torch.testing.assert_close(out.cpu(), ref_out, rtol=1e-5, atol=1e-5)
    for p, g in zip(xnet.parameters(), ref_grads):
        assert p.grad.is_xdal
        torch.testing.assert_close(p.grad.cpu(), g, rtol=1e-5, atol=1e-5)
