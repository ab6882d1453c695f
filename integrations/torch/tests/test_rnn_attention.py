"""nn.LSTM, nn.GRU (PyTorch's fused cells, composed on xdal) and scaled_dot_product_attention, against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def _pair(module_cls, *args, **kwargs):
    torch.manual_seed(0)
    cpu = module_cls(*args, **kwargs)
    dev = module_cls(*args, **kwargs)
    dev.load_state_dict(cpu.state_dict())
    return cpu, dev.to("xdal")


def _grads_close(cpu, dev, **tol):
    for (name, p), q in zip(cpu.named_parameters(), dev.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, msg=name, **tol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU], ids=lambda c: c.__name__)
def test_rnn_forward_backward_match_cpu(cls, bias):
    cpu, dev = _pair(cls, 6, 5, num_layers=2, batch_first=True, bias=bias, bidirectional=True)
    x = torch.randn(3, 4, 6)
    out, _ = cpu(x)
    got, _ = dev(x.to("xdal"))
    assert got.device.type == "xdal"
    torch.testing.assert_close(got.cpu(), out)
    out.square().sum().backward()
    got.square().sum().backward()
    _grads_close(cpu, dev)


@pytest.mark.parametrize("cls", [torch.nn.LSTMCell, torch.nn.GRUCell], ids=lambda c: c.__name__)
def test_rnn_cells_with_state_match_cpu(cls):
    cpu, dev = _pair(cls, 4, 3)
    x = torch.randn(5, 4, requires_grad=True)
    h = torch.randn(5, 3, requires_grad=True)
    xd = x.detach().to("xdal").requires_grad_()
    hd = h.detach().to("xdal").requires_grad_()
    if cls is torch.nn.LSTMCell:
        c = torch.randn(5, 3, requires_grad=True)
        cd = c.detach().to("xdal").requires_grad_()
        hy, cy = cpu(x, (h, c))
        hyd, cyd = dev(xd, (hd, cd))
        (hy.sum() + cy.square().sum()).backward()
        (hyd.sum() + cyd.square().sum()).backward()
        torch.testing.assert_close(cyd.cpu(), cy)
        torch.testing.assert_close(cd.grad.cpu(), c.grad)
    else:
        hy = cpu(x, h)
        hyd = dev(xd, hd)
        hy.square().sum().backward()
        hyd.square().sum().backward()
    torch.testing.assert_close(hyd.cpu(), hy)
    torch.testing.assert_close(xd.grad.cpu(), x.grad)
    torch.testing.assert_close(hd.grad.cpu(), h.grad)
    _grads_close(cpu, dev)


def test_lstm_only_cy_used_backward():
    # The cell's backward with no gradient for hy (only cy flows).
    cpu, dev = _pair(torch.nn.LSTMCell, 4, 3)
    x = torch.randn(2, 4)
    cpu(x)[1].sum().backward()
    dev(x.to("xdal"))[1].sum().backward()
    _grads_close(cpu, dev)


def _attention_case(dtype, mask, causal, gqa=False, seq_k=7):
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, 5, 8, generator=g).to(dtype)
    kv_heads = 2 if gqa else 4
    k = torch.randn(2, kv_heads, seq_k, 8, generator=g).to(dtype)
    v = torch.randn(2, kv_heads, seq_k, 8, generator=g).to(dtype)
    m = None
    if mask == "bool":
        m = torch.rand(5, seq_k, generator=g) > 0.3
        m[:, 0] = True
    elif mask == "float":
        m = torch.randn(2, 1, 5, seq_k, generator=g).to(dtype)
    return q, k, v, m


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("mask,causal", [(None, False), (None, True), ("bool", False), ("float", False)])
def test_sdpa_forward_backward_match_cpu(dtype, mask, causal):
    q, k, v, m = _attention_case(dtype, mask, causal)
    leaves = [t.requires_grad_() for t in (q, k, v)]
    dleaves = [t.detach().to("xdal").requires_grad_() for t in (q, k, v)]
    dm = None if m is None else m.to("xdal")
    # float64 takes the math path on xdal (as on CUDA), the CPU its fused
    # kernel: the same results to rounding. Other types run the CPU's
    # fused kernel on xdal too: the same bits.
    same = torch.equal if dtype != torch.float64 else torch.allclose
    out = F.scaled_dot_product_attention(*leaves, attn_mask=m, is_causal=causal)
    got = F.scaled_dot_product_attention(*dleaves, attn_mask=dm, is_causal=causal)
    assert same(got.cpu(), out)
    grad = torch.randn_like(out)
    out.backward(grad)
    got.backward(grad.to("xdal"))
    for a, b in zip(leaves, dleaves):
        assert same(b.grad.cpu(), a.grad)


def test_sdpa_in_float64_takes_the_math_path_and_has_a_second_derivative():
    q, k, v, _ = _attention_case(torch.float64, None, True)
    assert torch._fused_sdp_choice(q.to("xdal"), k.to("xdal"), v.to("xdal")) == int(SDPBackend.MATH)
    inputs = [t[:1, :1].to("xdal").requires_grad_() for t in (q, k, v)]
    # The fused kernel's backward has no derivative: on the CPU, where
    # float64 takes it, this raises.
    assert torch.autograd.gradgradcheck(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), inputs)


def test_sdpa_backward_without_a_gradient_for_its_output_gives_none():
    # What gradcheck's undefined-gradient check does: the output's gradient
    # made undefined on its way back, which the fused kernel's backward
    # must take (here: in float32, the fused kernel's path).
    q, k, v, _ = _attention_case(torch.float32, None, False)
    inputs = [t.to("xdal").requires_grad_() for t in (q, k, v)]
    out = torch._C._functions.UndefinedGrad()(F.scaled_dot_product_attention(*inputs))
    grads = torch.autograd.grad(out, inputs, torch.ones_like(out), allow_unused=True)
    assert all(g is None or not g.any() for g in grads)


def test_sdpa_takes_the_out_of_tree_entry_point_where_the_cpu_takes_its_fused_kernel():
    q, k, v, _ = _attention_case(torch.float32, None, False)
    cpu_choice = torch._fused_sdp_choice(q, k, v)
    dev_choice = torch._fused_sdp_choice(q.to("xdal"), k.to("xdal"), v.to("xdal"))
    assert cpu_choice == int(SDPBackend.FLASH_ATTENTION)
    assert dev_choice == int(SDPBackend.OVERRIDEABLE)
    with sdpa_kernel(SDPBackend.MATH):  # the CPU's choice follows the user's restriction, and xdal's with it
        assert torch._fused_sdp_choice(q.to("xdal"), k.to("xdal"), v.to("xdal")) == int(SDPBackend.MATH)


def test_sdpa_math_path_and_grouped_query_attention_match_cpu():
    q, k, v, _ = _attention_case(torch.float32, None, False, gqa=True)
    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    got = F.scaled_dot_product_attention(q.to("xdal"), k.to("xdal"), v.to("xdal"), enable_gqa=True)
    torch.testing.assert_close(got.cpu(), out)
    q, k, v, m = _attention_case(torch.float32, "float", False)
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        got = F.scaled_dot_product_attention(q.to("xdal"), k.to("xdal"), v.to("xdal"), attn_mask=m.to("xdal"))
    torch.testing.assert_close(got.cpu(), out)


def test_sdpa_with_mask_gradient_matches_cpu():
    q, k, v, m = _attention_case(torch.float32, "float", False)
    m.requires_grad_()
    dm = m.detach().to("xdal").requires_grad_()
    F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum().backward()
    F.scaled_dot_product_attention(q.to("xdal"), k.to("xdal"), v.to("xdal"), attn_mask=dm).sum().backward()
    torch.testing.assert_close(dm.grad.cpu(), m.grad)
