"""Dynamic int8 ``LSTM`` (``torch.ao.nn.quantized.dynamic.LSTM``, printed
``DynamicQuantizedLSTM``), what ``quantize_dynamic(model, {nn.LSTM})`` swaps in.

Each layer and direction keeps its two weights as qint8 (one per-tensor symmetric scale
each, from the qconfig's weight observer, as torch's ``from_float``) and its float biases.
The arithmetic is torch's CPU path (ATen ``quantized_lstm`` with dynamic cell params):

* the input projection of the whole sequence is one dynamic int8 linear
  (``x @ W_ih^T + b_ih``, the activations quantized once per layer over all time steps,
  see :mod:`.dynamic`);
* each step adds the dynamic int8 linear of the hidden state (``h @ W_hh^T + b_hh``,
  quantized per step), then the float LSTM cell (sigmoid/tanh gates ``i, f, g, o``).

Inference only (no autograd through the int8 weights, as torch's). Not provided (they
raise): ``PackedSequence`` inputs, ``proj_size``, and dropout between layers in training
mode.
"""

from __future__ import annotations

import numpy as np

from ...autograd.tensor import Tensor, _wrap
from ...nn.module import Module
from ...nn.modules.rnn import RNNBase
from ..int8_gemm import int8_matmul
from .dynamic import quantize_input_dynamic
from .packed import PackedParams, quantize_weight

__all__ = ["LSTM"]


def _linear(x2, p: PackedParams):
    """The dynamic int8 linear of a 2-D float32 array (as ``dynamic.Linear.forward``)."""
    q, sx, zx = quantize_input_dynamic(x2)
    y = int8_matmul(q, zx, p.weight.array, p.w_zp()).astype(np.float32)
    y *= (np.float32(sx) * p.w_scale()).astype(np.float32)
    b = p.bias_array()
    if b is not None:
        y += b
    return y


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


class LSTM(Module):
    """Float in, float out; int8 weights, activations quantized per call (module docstring)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype="qint8"):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = 0
        dirs = 2 if bidirectional else 1
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"l{layer}" + ("_reverse" if d else "")
                setattr(self, f"ih_{sfx}", PackedParams((4 * hidden_size, in_size), False, bias))
                setattr(self, f"hh_{sfx}", PackedParams((4 * hidden_size, hidden_size), False, bias))

    @classmethod
    def from_float(cls, mod, weight_observer=None):
        """Quantize a float ``nn.LSTM`` with ``mod.qconfig.weight`` (one observer per weight)."""
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("dynamic quantized LSTM: proj_size is not supported (torch's "
                                      "is not either); quantize an LSTM without projections")
        make = weight_observer
        if make is None:
            qconfig = getattr(mod, "qconfig", None)
            if qconfig is None:
                raise ValueError("dynamic LSTM.from_float: the module has no qconfig; set "
                                 "mod.qconfig (e.g. default_dynamic_qconfig) or pass weight_observer")
            make = qconfig.weight
        new = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                  mod.dropout, mod.bidirectional)
        dirs = 2 if mod.bidirectional else 1
        for layer in range(mod.num_layers):
            for d in range(dirs):
                sfx = f"l{layer}" + ("_reverse" if d else "")
                for kind in ("ih", "hh"):
                    w = getattr(mod, f"weight_{kind}_{sfx}").array
                    q, scale, zp, per_channel = quantize_weight(w, make())
                    if per_channel:
                        raise NotImplementedError("dynamic quantized LSTM: per-channel weight "
                                                  "observers are not supported; use a per-tensor one")
                    b = getattr(mod, f"bias_{kind}_{sfx}").array if mod.bias else None
                    getattr(new, f"{kind}_{sfx}").set(q, scale, zp, b)
        return new

    def forward(self, input, hx=None):
        if not isinstance(input, Tensor):
            raise NotImplementedError(
                f"dynamic quantized LSTM takes a float Tensor, got {type(input).__name__} "
                "(PackedSequence inputs are not supported: pad the batch instead)")
        if self.training and self.dropout and self.num_layers > 1:
            raise NotImplementedError("dynamic quantized LSTM: dropout between layers in training "
                                      "mode is not supported; call model.eval() first")
        x = input.array.astype(np.float32, copy=False)
        if x.ndim not in (2, 3):
            raise ValueError(f"LSTM: expected a 2-D or 3-D input, got shape {tuple(x.shape)}")
        unbatched = x.ndim == 2
        if unbatched:
            x = x[:, None]
        elif self.batch_first:
            x = x.swapaxes(0, 1)
        seq, batch = x.shape[:2]
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, batch, self.hidden_size)
        if hx is None:
            h0 = np.zeros(shape, np.float32)
            c0 = np.zeros(shape, np.float32)
        else:
            h0, c0 = (t.array.astype(np.float32, copy=False) for t in hx)
            if unbatched:
                h0, c0 = h0[:, None], c0[:, None]
            if h0.shape != shape or c0.shape != shape:
                raise RuntimeError(f"LSTM: expected hidden states of shape {shape}, got "
                                   f"{tuple(h0.shape)} and {tuple(c0.shape)}")
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                sfx = f"l{layer}" + ("_reverse" if d else "")
                k = layer * dirs + d
                out, h, c = self._direction(layer_in, getattr(self, f"ih_{sfx}"),
                                            getattr(self, f"hh_{sfx}"), h0[k], c0[k], reverse=bool(d))
                outs.append(out)
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if dirs == 1 else np.concatenate(outs, axis=-1)
        out = layer_in
        h_n, c_n = np.stack(hs), np.stack(cs)
        if unbatched:
            out, h_n, c_n = out[:, 0], h_n[:, 0], c_n[:, 0]
        elif self.batch_first:
            out = out.swapaxes(0, 1)
        return _wrap(np.ascontiguousarray(out)), (_wrap(h_n), _wrap(c_n))

    def _direction(self, x, ih: PackedParams, hh: PackedParams, h, c, reverse: bool):
        seq, batch, _ = x.shape
        hsz = self.hidden_size
        gates_x = _linear(x.reshape(seq * batch, -1), ih).reshape(seq, batch, 4 * hsz)
        out = np.empty((seq, batch, hsz), np.float32)
        steps = range(seq - 1, -1, -1) if reverse else range(seq)
        for t in steps:
            g = gates_x[t] + _linear(h, hh)
            i, f = _sigmoid(g[:, :hsz]), _sigmoid(g[:, hsz:2 * hsz])
            gg, o = np.tanh(g[:, 2 * hsz:3 * hsz]), _sigmoid(g[:, 3 * hsz:])
            c = f * c + i * gg
            h = (o * np.tanh(c)).astype(np.float32)
            out[t] = h
        return out, h, c

    extra_repr = RNNBase.extra_repr  # the float LSTM's printout (proj_size is 0 here)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"

    def __repr__(self) -> str:
        # torch prints the layer on one line, its packed weights hidden
        return f"{self._get_name()}({self.extra_repr()})"
