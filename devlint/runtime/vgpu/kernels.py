"""CPU versions of the CUDA-only operators that PyTorch picks for any non-CPU tensor.

ATen's recurrent cells take the fused path for CUDA, XPU *and* PrivateUse1 inputs
(``RNN.cpp``), and those fused operators have CUDA kernels only. These are their formulas,
written with CPU operators, with the same outputs and workspace layout as the CUDA kernels.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

# pytest hides this module's frames from tracebacks, as it hides its own: a device error
# raised here belongs to the user's line that called torch.
__tracebackhide__ = True

Tensor = torch.Tensor


def _lstm_cell(
    input_gates: Tensor,
    hidden_gates: Tensor,
    cx: Tensor,
    input_bias: Optional[Tensor] = None,
    hidden_bias: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor, Tensor]:
    gates = input_gates + hidden_gates
    if input_bias is not None and hidden_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    return hy, cy, torch.cat([i, f, g, o], 1)


def _lstm_cell_backward(
    grad_hy: Optional[Tensor],
    grad_cy: Optional[Tensor],
    cx: Tensor,
    cy: Tensor,
    workspace: Tensor,
    has_bias: bool,
) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    grad_hy = torch.zeros_like(cy) if grad_hy is None else grad_hy
    grad_c = grad_hy * o * (1 - tanh_cy * tanh_cy)
    if grad_cy is not None:
        grad_c = grad_c + grad_cy
    grad_gates = torch.cat(
        [
            grad_c * g * i * (1 - i),
            grad_c * cx * f * (1 - f),
            grad_c * i * (1 - g * g),
            grad_hy * tanh_cy * o * (1 - o),
        ],
        1,
    )
    return grad_gates, grad_c * f, grad_gates.sum(0) if has_bias else None


def _gru_cell(
    input_gates: Tensor,
    hidden_gates: Tensor,
    hx: Tensor,
    input_bias: Optional[Tensor] = None,
    hidden_bias: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    if input_bias is not None and hidden_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    ir, ii, in_ = input_gates.chunk(3, 1)
    hr, hi, hn = hidden_gates.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (hx - n)
    return hy, torch.cat([r, z, n, hx, hn], 1)


def _gru_cell_backward(
    grad_hy: Tensor, workspace: Tensor, has_bias: bool
) -> tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
    r, z, n, hx, hn = workspace.chunk(5, 1)
    grad_n = grad_hy * (1 - z) * (1 - n * n)
    grad_z = grad_hy * (hx - n) * z * (1 - z)
    grad_r = grad_n * hn * r * (1 - r)
    grad_input = torch.cat([grad_r, grad_z, grad_n], 1)
    grad_hidden = torch.cat([grad_r, grad_z, grad_n * r], 1)
    biases = (grad_input.sum(0), grad_hidden.sum(0)) if has_bias else (None, None)
    return grad_input, grad_hidden, grad_hy * z, *biases


CUDA_ONLY: dict[str, Callable[..., Any]] = {
    "_thnn_fused_lstm_cell": _lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": _lstm_cell_backward,
    "_thnn_fused_gru_cell": _gru_cell,
    "_thnn_fused_gru_cell_backward": _gru_cell_backward,
}
