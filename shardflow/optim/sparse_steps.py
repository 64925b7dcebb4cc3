"""The steps of ``SGD`` and ``Adagrad`` for a sparse COO gradient (``Embedding(sparse=True)``'s
weight: ``autograd/sparse_grad.py``), PyTorch's formulas on the rows the gradient names.

* SGD: ``p[rows] -= lr * values`` (duplicated rows add up, as PyTorch's ``param.add_(grad,
  alpha=-lr)`` of an uncoalesced gradient). With momentum the buffer is kept dense: PyTorch
  keeps a sparse buffer whose stored rows decay by ``momentum`` each step, the same numbers
  as a dense buffer whose other rows are zero. Weight decay with a sparse gradient is
  PyTorch's error (``grad.add(param)`` adds a dense tensor to a sparse one).
* Adagrad: the gradient coalesced (``rows`` unique, sorted), ``sum[rows] += values ** 2``,
  ``p[rows] -= clr * values / (sqrt(sum[rows]) + eps)``; weight decay refused, as PyTorch.

Every other optimizer refuses a sparse gradient with PyTorch's words before its step
(``hooks.refuse_sparse_grads``: "Adam does not support sparse gradients, please consider
SparseAdam instead"); these two and ``SparseAdam`` set ``_sparse_grads_ok``.
"""

from __future__ import annotations

import numpy as np

from ..backend import get_array_module


def _rows(grad):
    return grad._indices().array[0], grad._values().array


def sgd_sparse_step(opt, p, grad, lr, mom, damp, wd, nesterov, maximize) -> None:
    """One SGD step of ``p`` for the sparse ``grad`` (module docstring)."""
    if wd != 0:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead. (SGD with "
                           "weight_decay cannot take the sparse gradient of an Embedding(sparse=True): "
                           "set weight_decay=0 for its parameters, or use sparse=False)")
    x = p.array
    xp = get_array_module(x)
    rows, vals = _rows(grad)
    vals = vals.astype(x.dtype, copy=False)
    if maximize:
        vals = -vals
    if mom == 0:
        xp.add.at(x, rows, vals * x.dtype.type(-lr))
        return
    d = xp.zeros_like(x)
    xp.add.at(d, rows, vals)
    st = opt.state[p]
    buf = st.get("momentum_buffer")
    if buf is None:
        buf = st["momentum_buffer"] = opt._state_like(p, d.copy())
    else:
        b = buf.array
        b *= mom
        b += d * (1 - damp) if damp != 0 else d
    step = d + mom * buf.array if nesterov else buf.array
    x -= step * x.dtype.type(lr)


def adagrad_sparse_step(p, grad, st, clr, eps, maximize) -> None:
    """One Adagrad step of ``p`` for the sparse ``grad`` (module docstring; weight decay is
    refused by the caller before the step count moves)."""
    grad = grad.coalesce()
    rows, vals = _rows(grad)
    if vals.size == 0:
        return
    x, s = p.array, st["sum"].array
    vals = vals.astype(x.dtype, copy=False)
    if maximize:
        vals = -vals
    s[rows] += vals * vals
    std = np.sqrt(s[rows]) + eps
    x[rows] -= clr * (vals / std)
