"""torch.autocast("xdal") and torch.amp.GradScaler("xdal"): CUDA's policy
(matrix products and convolutions in the autocast dtype; softmax, losses,
norms and reductions in float32; mixed types promoted; binary_cross_entropy
refused), from PyTorch's own operator lists."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import make

XDAL = torch.device("xdal")
LOW = [torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", LOW)
def test_matrix_products_and_convolutions_run_in_the_autocast_dtype(dtype):
    a, b = make((8, 16), torch.float32).to(XDAL), make((16, 4), torch.float32, seed=1).to(XDAL)
    w = make((5, 16), torch.float32, seed=2).to(XDAL)
    img, k = make((1, 2, 6, 6), torch.float32, seed=3).to(XDAL), make((3, 2, 3, 3), torch.float32, seed=4).to(XDAL)
    with torch.autocast("xdal", dtype=dtype):
        mm, linear, conv = a @ b, F.linear(a, w), F.conv2d(img, k)
    assert mm.dtype == linear.dtype == conv.dtype == dtype
    # The products of the inputs rounded to `dtype`, as CUDA's autocast computes them.
    torch.testing.assert_close(mm.cpu(), (a.cpu().to(dtype).float() @ b.cpu().to(dtype).float()).to(dtype),
                               rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(conv.cpu().float(), F.conv2d(img.cpu().to(dtype).float(), k.cpu().to(dtype).float()),
                               rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("dtype", LOW)
def test_precision_sensitive_operators_run_in_float32(dtype):
    x = make((4, 10), torch.float32).to(XDAL).to(dtype)
    target = torch.randint(0, 10, (4,), generator=torch.Generator().manual_seed(0)).to(XDAL)
    with torch.autocast("xdal", dtype=dtype):
        soft, logsoft = torch.softmax(x, 1), torch.log_softmax(x, 1)
        loss = F.cross_entropy(x, target)
        total = x.sum()
        normed = F.layer_norm(x, (10,))
    for t in (soft, logsoft, loss, total, normed):
        assert t.dtype == torch.float32
    torch.testing.assert_close(soft.cpu(), torch.softmax(x.cpu().float(), 1))


def test_other_operators_keep_their_types_and_mixed_ones_are_promoted():
    x = make((6,), torch.float32).to(XDAL)
    h = x.to(torch.float16)
    with torch.autocast("xdal", dtype=torch.float16):
        assert (x + x).dtype == torch.float32  # not on a list: falls through
        assert torch.addcmul(x, h, h).dtype == torch.float32  # promote
        assert torch.relu(h).dtype == torch.float16


def test_binary_cross_entropy_is_refused_as_unsafe_and_its_logits_twin_runs():
    p = torch.sigmoid(make((5,), torch.float32).to(XDAL))
    y = torch.ones(5, device=XDAL)
    with torch.autocast("xdal", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, y)
        assert F.binary_cross_entropy_with_logits(p, y).dtype == torch.float32


def test_outside_the_region_nothing_is_cast():
    a = make((4, 4), torch.float32).to(XDAL)
    with torch.autocast("xdal", dtype=torch.bfloat16):
        pass
    assert (a @ a).dtype == torch.float32
    with torch.autocast("xdal", dtype=torch.bfloat16, enabled=False):
        assert (a @ a).dtype == torch.float32


def test_a_mixed_precision_training_step_with_a_grad_scaler_trains():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).to(XDAL)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("xdal", init_scale=2.0**8)
    x = make((16, 10), torch.float32).to(XDAL)
    y = torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(1)).to(XDAL)
    losses = []
    for _ in range(12):
        opt.zero_grad()
        with torch.autocast("xdal", dtype=torch.float16):
            out = model(x)
            loss = F.cross_entropy(out, y)
        assert out.dtype == torch.float16 and loss.dtype == torch.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert losses[-1] < losses[0] * 0.8, losses
    assert scaler.get_scale() > 0


def test_the_grad_scaler_skips_a_step_whose_gradients_overflowed_and_backs_off():
    torch.manual_seed(0)
    model = nn.Linear(4, 2).to(XDAL)
    before = [p.detach().cpu().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("xdal", init_scale=2.0**60)  # float16 gradients overflow
    with torch.autocast("xdal", dtype=torch.float16):
        loss = model(make((3, 4), torch.float32).to(XDAL)).float().square().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**59
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p.detach().cpu(), b)
