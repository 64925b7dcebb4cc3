"""Recurrent layers with PyTorch's names, parameters and semantics: ``RNN``, ``LSTM``, ``GRU``
(``num_layers``, ``bias``, ``batch_first``, ``dropout`` between layers, ``bidirectional``,
optional initial state) and the single-step ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Parameters follow PyTorch's names and layout, so torch state_dicts load unchanged:
``weight_ih_l{k}`` ``(G*H, in)``, ``weight_hh_l{k}`` ``(G*H, H)``, ``bias_ih_l{k}``,
``bias_hh_l{k}`` ``(G*H,)`` (``_reverse`` suffix for the backward direction), registered in
that order per layer and direction, with the gates stacked in PyTorch's order — LSTM i, f,
g, o; GRU r, z, n (G = 4, 3, 1 for LSTM, GRU, RNN). Every parameter starts from
U(-1/sqrt(H), 1/sqrt(H)), as in PyTorch.

``LSTM(proj_size=P)`` (0 < P < H) projects the hidden state, ``h_t = W_hr (o_t * tanh(c_t))``,
with ``weight_hr_l{k}`` ``(P, H)`` registered after the biases, as in PyTorch: ``weight_hh``
is then ``(4H, P)``, ``h_0``/``h_n`` ``(L*D, B, P)``, ``c_0``/``c_n`` ``(L*D, B, H)``, the output
``(T, B, D*P)`` and layer k > 0 reads ``D*P`` features. The projection runs inside the same
fused recurrence op (one extra ``(B, H) @ (H, P)`` per step).

Algorithm per layer and direction: the input projection of all time steps is one GEMM
(``linear(x, W_ih, b_ih)`` over ``(T*B, in)``); the time loop and back-propagation through
time run inside one fused op, ``ops.recurrence`` (see its docstring for the gate formulas
and the single weight-gradient GEMM). A bidirectional layer concatenates the two
directions' outputs on the feature dim; ``dropout`` is applied to every layer's output
except the last one, in training mode only (for a packed input, on the packed rows only,
so that the mask takes torch's draws). Cells reuse the same op with T = 1.

Variable lengths: a ``PackedSequence`` input (``nn.utils.rnn.pack_padded_sequence``) is
gathered into a padded time-first batch (sorted by decreasing length), every recurrence
runs with the per-step ``batch_sizes`` so finished sequences carry their state, and the
output is packed again; ``h_n`` is each sequence's state after its own last step, returned
in the original batch order, as in PyTorch.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ...autograd import Tensor
from ...ops import cat, stack, zeros
from ...ops.recurrence import recurrence
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _packed_positions
from ._utils import empty

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_OP_MODE = {"RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu", "LSTM": "lstm", "GRU": "gru"}


class RNNBase(Module):
    """Shared constructor, parameter registration and multi-layer driver of RNN/LSTM/GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode!r}; expected one of {sorted(_GATES)}")
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             f"probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError(f"hidden_size must be greater than zero, got {hidden_size}")
        if num_layers <= 0:
            raise ValueError(f"num_layers must be greater than zero, got {num_layers}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size  # the size of h
        fk = {"device": device, "dtype": dtype}
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden_size * num_directions
                sfx = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{sfx}"
                    setattr(self, name, Parameter(empty(*shape, **fk)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """No-op (PyTorch compacts cuDNN weights here; shardflow keeps them separate)."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ------------------------------------------------------------------ checks
    def _check_hidden(self, hx, expected, what="hidden"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(hx.shape)}")

    def _prepare(self, input, hx_list):
        """Validate, add the batch dim to unbatched input, put time first, unpack packed
        input. Returns (x (T, B, in), [h0 (L*D, B, H), ...], is_batched, packed) where
        ``packed`` is None or the input PackedSequence."""
        name = type(self).__name__
        if isinstance(input, PackedSequence):
            return self._prepare_packed(input, hx_list)
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        is_batched = input.ndim == 3
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        if not is_batched:
            input = input.unsqueeze(1)  # (T, 1, in)
            for h in hx_list:
                if h is not None and h.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{h.ndim}-D tensor")
            hx_list = [None if h is None else h.unsqueeze(1) for h in hx_list]
        else:
            for h in hx_list:
                if h is not None and h.ndim != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                       f"{h.ndim}-D tensor")
            if self.batch_first:
                input = input.transpose(0, 1)
        self._check_hidden_dtypes(input, hx_list)
        return input, hx_list, is_batched, None

    @staticmethod
    def _check_hidden_dtypes(input, hx_list):
        for h in hx_list:
            if h is not None and h.dtype != input.dtype:
                raise RuntimeError(
                    f"Input and hidden tensors are not the same dtype, found input tensor with "
                    f"{input.dtype} and hidden tensor with {h.dtype}; cast one with .to(dtype)")

    def _prepare_packed(self, packed, hx_list):
        data = packed.data
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {data.shape[-1]}")
        batch_sizes = packed.batch_sizes.numpy().astype(np.int64)
        T, B = len(batch_sizes), int(batch_sizes[0])
        # padded (T, B, in) gathered from [data; zero row]; rows past an end read the zeros
        source = cat([data, zeros(1, data.shape[1], dtype=data.dtype, device=data.device)], 0)
        index = np.full((T, B), data.shape[0], dtype=np.int64)
        t_idx, b_idx = _packed_positions(batch_sizes)
        index[t_idx, b_idx] = np.arange(t_idx.size)
        x = source[index]
        for h in hx_list:
            if h is not None and h.ndim != 3:
                raise RuntimeError(f"For packed input, hx should be 3-D but got {h.ndim}-D tensor")
        if packed.sorted_indices is not None:  # the batch was sorted by length: follow it
            hx_list = [None if h is None else h.index_select(1, packed.sorted_indices)
                       for h in hx_list]
        self._check_hidden_dtypes(x, hx_list)
        return x, hx_list, True, packed

    def _run(self, x, states, packed=None):
        """The layer/direction loop on time-first ``x``; ``states`` is [h0] or [h0, c0],
        ``(L*D, B, P)`` and ``(L*D, B, H)`` (P = proj_size or H). Returns
        (output (T, B, D*P), [h_n, (c_n)])."""
        mode = _OP_MODE[self.mode]
        batch_sizes = None if packed is None else packed.batch_sizes.numpy()
        num_directions = 2 if self.bidirectional else 1
        finals = [[] for _ in states]
        layer_input = x
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                w = [getattr(self, n) for n in self._all_weights[idx]]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                w_hr = w[-1] if self.proj_size > 0 else None
                xg = F.linear(layer_input, w_ih, b_ih)  # (T, B, G*H)
                h0, c0 = states[0][idx], (states[1][idx] if len(states) > 1 else None)
                res = recurrence(xg, w_hh, b_hh, h0, c0, w_hr, mode=mode,
                                 reverse=direction == 1, batch_sizes=batch_sizes)
                outs.append(res[0])
                for k in range(len(states)):
                    finals[k].append(res[1 + k])
            layer_input = outs[0] if num_directions == 1 else cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = self._between_layers_dropout(layer_input, batch_sizes)
        return layer_input, [stack(f, 0) for f in finals]

    def _between_layers_dropout(self, layer_input, batch_sizes):
        """Dropout on a layer's output before the next layer. A packed input's mask is drawn
        over its packed rows only (``(sum(batch_sizes), F)``, time-major), as torch draws it
        on ``PackedSequence.data``: a mask over the padded ``(T, B, F)`` would take other
        numbers from the generator and differ from torch's after the same ``manual_seed``."""
        if batch_sizes is None:
            return F.dropout(layer_input, self.dropout, True)
        t_idx, b_idx = _packed_positions(np.asarray(batch_sizes, dtype=np.int64))
        dropped = F.dropout(layer_input[t_idx, b_idx], self.dropout, True)
        T, B, width = layer_input.shape
        # padded again: rows past a sequence's end read the appended zero row (never used)
        index = np.full((T, B), t_idx.size, dtype=np.int64)
        index[t_idx, b_idx] = np.arange(t_idx.size)
        source = cat([dropped, zeros(1, width, dtype=dropped.dtype, device=dropped.device)], 0)
        return source[index]

    def _zeros_state(self, x, size=None):
        return zeros(*self._expected_hidden(x, size), dtype=x.dtype, device=x.device)

    def _finish(self, output, finals, is_batched, packed=None):
        if packed is not None:
            batch_sizes = packed.batch_sizes.numpy().astype(np.int64)
            t_idx, b_idx = _packed_positions(batch_sizes)
            data = output[t_idx, b_idx]
            if packed.unsorted_indices is not None:
                finals = [f.index_select(1, packed.unsorted_indices) for f in finals]
            return PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                  packed.unsorted_indices), finals
        if not is_batched:
            return output.squeeze(1), [f.squeeze(1) for f in finals]
        if self.batch_first:
            # a transposed view, as torch returns it (not contiguous: ``out.view(B, -1)``
            # raises in both; ``is_contiguous()`` and the strides are torch's)
            output = output.transpose(0, 1)
        return output, finals

    def _expected_hidden(self, x, size=None):
        """``(L*D, B, size)``; ``size`` defaults to the size of h (proj_size or hidden_size)."""
        num_directions = 2 if self.bidirectional else 1
        if size is None:
            size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, x.shape[1], size)


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act = tanh or relu.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)``
    returns ``(output, h_n)``.
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        x, (h0,), is_batched, packed = self._prepare(input, [hx])
        if h0 is None:
            h0 = self._zeros_state(x)
        else:
            self._check_hidden(h0, self._expected_hidden(x))
        output, (h_n,) = self._run(x, [h0], packed)
        output, (h_n,) = self._finish(output, [h_n], is_batched, packed)
        return output, h_n


class LSTM(RNNBase):
    """LSTM with PyTorch's gate order (i, f, g, o):
    ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)`` — or ``h_t = W_hr (o * tanh(c_t))``
    with ``proj_size > 0`` (h of size proj_size, c of size hidden_size).

    ``forward(input, hx=None)`` with ``hx = (h_0, c_0)``; returns ``(output, (h_n, c_n))``.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        if hx is not None and not (isinstance(hx, tuple | list) and len(hx) == 2):
            raise TypeError("LSTM expects hx to be a tuple (h_0, c_0) of Tensors, got "
                            f"{type(hx).__name__}")
        x, (h0, c0), is_batched, packed = self._prepare(
            input, list(hx) if hx is not None else [None, None])
        if h0 is None:
            h0 = self._zeros_state(x)
            c0 = self._zeros_state(x, self.hidden_size) if self.proj_size > 0 else h0
        else:
            self._check_hidden(h0, self._expected_hidden(x), "hidden[0]")
            self._check_hidden(c0, self._expected_hidden(x, self.hidden_size), "hidden[1]")
        output, finals = self._run(x, [h0, c0], packed)
        output, (h_n, c_n) = self._finish(output, finals, is_batched, packed)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """GRU with PyTorch's gate order (r, z, n):
    ``n_t = tanh(W_in x_t + b_in + r * (W_hn h_{t-1} + b_hn))``,
    ``h_t = (1 - z) * n_t + z * h_{t-1}``. ``forward(input, hx=None)`` -> ``(output, h_n)``.
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    forward = RNN.forward


# ---------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Parameters ``weight_ih`` ``(G*H, in)``, ``weight_hh`` ``(G*H, H)``, ``bias_ih``,
    ``bias_hh`` ``(G*H,)``, all U(-1/sqrt(H), 1/sqrt(H)). One step runs the recurrence op
    with T = 1 (see the module docstring)."""

    _mode = "rnn_tanh"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        fk = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, **fk))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, **fk))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _prepare(self, input, hx_list):
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for h in hx_list:
            if h is not None and h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D instead")
        is_batched = input.ndim == 2
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        if not is_batched:
            input = input.unsqueeze(0)
            hx_list = [None if h is None else h.unsqueeze(0) for h in hx_list]
        batch = input.shape[0]
        out = []
        for k, h in enumerate(hx_list):
            if h is None:
                h = zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device)
            elif tuple(h.shape) != (batch, self.hidden_size):
                raise RuntimeError(f"hidden{k} has inconsistent size {list(h.shape)}: expected "
                                   f"{[batch, self.hidden_size]} (batch, hidden_size)")
            elif h.dtype != input.dtype:
                raise RuntimeError(f"hidden{k} has dtype {h.dtype} but input has {input.dtype}; "
                                   "cast one with .to(dtype)")
            out.append(h)
        return input, out, is_batched

    def _step(self, input, states):
        xg = F.linear(input, self.weight_ih, self.bias_ih).unsqueeze(0)  # (1, B, G*H)
        res = recurrence(xg, self.weight_hh, self.bias_hh, *states, mode=self._mode)
        return res[1:]


class RNNCell(RNNCellBase):
    """``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``; ``forward(input, hx=None)`` -> ``h'``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}; select 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        self._mode = "rnn_" + nonlinearity

    def forward(self, input, hx=None):
        x, states, is_batched = self._prepare(input, [hx])
        (h,) = self._step(x, states)
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, hx=None)`` with ``hx = (h, c)`` -> ``(h', c')``."""

    _mode = "lstm"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and not (isinstance(hx, tuple | list) and len(hx) == 2):
            raise TypeError("LSTMCell expects hx to be a tuple (h, c) of Tensors, got "
                            f"{type(hx).__name__}")
        x, states, is_batched = self._prepare(input, list(hx) if hx is not None else [None, None])
        h, c = self._step(x, states)
        if not is_batched:
            h, c = h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step; ``forward(input, hx=None)`` -> ``h'``."""

    _mode = "gru"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    forward = RNNCell.forward
