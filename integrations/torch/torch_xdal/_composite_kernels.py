"""ATen kernels for xdal written with other ATen operators, registered for PrivateUse1.

PyTorch routes some operators of an accelerator to entry points that only
CUDA (or an out-of-tree backend) implements, with no CPU kernel behind
them, so the CPU fallback cannot run them:

- ``nn.LSTM``/``nn.GRU`` (and their cells) call ``_thnn_fused_lstm_cell`` and
  ``_thnn_fused_gru_cell`` on every device but the CPU. They are computed
  here from elementwise operators on the device, with the workspace layout
  and the backward formulas of PyTorch's CUDA kernels; autograd's formulas
  for these operators call the backward kernels below.
- ``scaled_dot_product_attention``: where the CPU would run its fused
  (flash) kernel, xdal's choice of kernel (registration.cpp) names the entry
  point PyTorch reserves for out-of-tree backends,
  ``_scaled_dot_product_fused_attention_overrideable``, implemented here
  (with its backward) by that CPU kernel: results are the CPU's to the last
  bit. Where the CPU takes the math path, so does xdal (PyTorch's
  decomposition, on the device).

Kept in Python: these are compositions of ATen calls, and no C++ unit is
rebuilt for them.
"""

from __future__ import annotations

import torch

_lib = torch.library.Library("aten", "IMPL")


def _impl(name):
    def register(fn):
        _lib.impl(name, fn, "PrivateUse1")
        return fn

    return register


def _biased(input_gates, hidden_gates, input_bias, hidden_bias):
    if (input_bias is None) != (hidden_bias is None):
        raise RuntimeError("xdal: fused RNN cell: input_bias and hidden_bias must both be given or both be None")
    if input_bias is None:
        return input_gates, hidden_gates
    return input_gates + input_bias, hidden_gates + hidden_bias


@_impl("_thnn_fused_lstm_cell")
def _fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    igates, hgates = _biased(input_gates, hidden_gates, input_bias, hidden_bias)
    ingate, forgetgate, cellgate, outgate = (igates + hgates).chunk(4, 1)
    ingate, forgetgate, outgate = ingate.sigmoid(), forgetgate.sigmoid(), outgate.sigmoid()
    cellgate = cellgate.tanh()
    cy = forgetgate * cx + ingate * cellgate
    hy = outgate * cy.tanh()
    # The workspace holds the activated gates, as CUDA's kernel keeps them.
    workspace = torch.cat([ingate, forgetgate, cellgate, outgate], 1)
    return hy, cy, workspace


@_impl("_thnn_fused_lstm_cell_backward_impl")
def _fused_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    if grad_hy is None and grad_cy is None:
        return None, None, None
    ingate, forgetgate, cellgate, outgate = workspace.chunk(4, 1)
    grad_cell = torch.zeros_like(cx) if grad_cy is None else grad_cy
    if grad_hy is not None:
        tanh_cy = cy.tanh()
        grad_cell = grad_cell + grad_hy * outgate * (1 - tanh_cy * tanh_cy)
        grad_out = grad_hy * tanh_cy * outgate * (1 - outgate)
    else:
        grad_out = torch.zeros_like(outgate)
    grad_in = grad_cell * cellgate * ingate * (1 - ingate)
    grad_forget = grad_cell * cx * forgetgate * (1 - forgetgate)
    grad_cellgate = grad_cell * ingate * (1 - cellgate * cellgate)
    grad_gates = torch.cat([grad_in, grad_forget, grad_cellgate, grad_out], 1)
    grad_cx = grad_cell * forgetgate
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, grad_cx, grad_bias


@_impl("_thnn_fused_gru_cell")
def _fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    igates, hgates = _biased(input_gates, hidden_gates, input_bias, hidden_bias)
    ir, ii, in_ = igates.chunk(3, 1)
    hr, hi, hn = hgates.chunk(3, 1)
    resetgate = (ir + hr).sigmoid()
    inputgate = (ii + hi).sigmoid()
    newgate = (in_ + resetgate * hn).tanh()
    hy = newgate + inputgate * (hx - newgate)
    workspace = torch.cat([resetgate, inputgate, newgate, hx, hn], 1)
    return hy, workspace


@_impl("_thnn_fused_gru_cell_backward")
def _fused_gru_cell_backward(grad_hy, workspace, has_bias):
    resetgate, inputgate, newgate, hx, hn = workspace.chunk(5, 1)
    grad_inputgate = grad_hy * (hx - newgate) * inputgate * (1 - inputgate)
    grad_hx = grad_hy * inputgate
    grad_newgate = grad_hy * (1 - inputgate) * (1 - newgate * newgate)
    grad_hn = grad_newgate * resetgate
    grad_resetgate = grad_newgate * hn * resetgate * (1 - resetgate)
    grad_input_gates = torch.cat([grad_resetgate, grad_inputgate, grad_newgate], 1)
    grad_hidden_gates = torch.cat([grad_resetgate, grad_inputgate, grad_hn], 1)
    if has_bias:
        return grad_input_gates, grad_hidden_gates, grad_hx, grad_input_gates.sum(0), grad_hidden_gates.sum(0)
    return grad_input_gates, grad_hidden_gates, grad_hx, None, None


def _on_cpu(t):
    return None if t is None else t.cpu()


_EMPTY = torch.empty(0)


@_impl("_scaled_dot_product_fused_attention_overrideable")
def _sdpa_overrideable(query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False, return_debug_mask=False,
                       *, scale=None):
    if return_debug_mask:
        raise NotImplementedError("xdal: scaled_dot_product_attention: return_debug_mask is not supported")
    out, logsumexp = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query.cpu(), key.cpu(), value.cpu(), dropout_p, is_causal, attn_mask=_on_cpu(attn_bias), scale=scale)
    device = query.device
    empty = _EMPTY.to(device)
    # cum_seq_*, max_* and philox_* belong to variable-length and dropout
    # kernels of GPUs; the CPU kernel has none.
    return (out.to(device), logsumexp.to(device), empty, empty, query.size(-2), key.size(-2), empty, empty, empty)


@_impl("_scaled_dot_product_fused_attention_overrideable_backward")
def _sdpa_overrideable_backward(grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp, cum_seq_q,
                                cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *,
                                scale=None):
    if grad_out is None:
        # No gradient reached the attention's output: none leaves for its
        # inputs (as the CPU's kernel answers an undefined gradient).
        return None, None, None, None
    device = query.device
    mask = _on_cpu(attn_bias) if attn_bias is not None and attn_bias.numel() else None
    if grad_input_mask[3] and mask is not None:
        raise NotImplementedError("xdal: scaled_dot_product_attention: the gradient of attn_mask is not supported "
                                  "by the fused kernel; use torch.nn.attention.sdpa_kernel(SDPBackend.MATH)")
    gq, gk, gv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad_out.cpu(), query.cpu(), key.cpu(), value.cpu(), out.cpu(), logsumexp.cpu(), dropout_p, is_causal,
        attn_mask=mask, scale=scale)
    return gq.to(device), gk.to(device), gv.to(device), None
