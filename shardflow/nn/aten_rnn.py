"""torch's functional recurrent primitives: ``torch.lstm``, ``gru``, ``rnn_tanh``,
``rnn_relu`` and the one-step ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
``rnn_relu_cell``, with aten's argument order.

``torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
batch_first)`` returns ``(output, h_n, c_n)`` (``gru``/``rnn_*``: ``hx`` one tensor,
``(output, h_n)``); ``params`` is the flat list ``nn.LSTM._flat_weights`` holds: per layer and
direction ``w_ih, w_hh[, b_ih, b_hh][, w_hr]`` (``w_hr`` when the LSTM projects). The math is
``nn.LSTM``'s: one input-projection ``linear`` per layer and direction, then the fused
recurrence op (``ops/recurrence.py``); ``dropout`` between layers when ``train``. The cells
take ``(input, hx, w_ih, w_hh, b_ih=None, b_hh=None)``.

Not built: the packed-data overloads (``torch.lstm(data, batch_sizes, hx, params, ...)``):
they raise NotImplementedError naming ``nn.LSTM`` with a ``PackedSequence``, which runs them.
"""

from __future__ import annotations

from ..autograd import Tensor
from ..ops import cat, stack
from ..ops.recurrence import recurrence
from . import functional as F

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


def _run(mode, input, states, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    if not isinstance(has_biases, bool):  # aten's data overload: (data, batch_sizes, hx, params, ...)
        raise NotImplementedError(
            f"torch.{mode}(data, batch_sizes, ...) (the packed-sequence overload) is not built in shardflow; "
            "expected (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first). "
            "Run packed sequences through the nn.LSTM/nn.GRU/nn.RNN module with a PackedSequence")
    directions = 2 if bidirectional else 1
    per = 2 + 2 * has_biases
    groups = num_layers * directions
    if len(params) == groups * (per + 1) and mode == "lstm":
        per += 1  # the projection weight w_hr
    elif len(params) != groups * per:
        raise RuntimeError(f"torch.{mode}: expected {groups * per} parameters (w_ih, w_hh"
                           f"{', b_ih, b_hh' if has_biases else ''} per layer and direction for {num_layers} layer(s), "
                           f"{directions} direction(s)), got {len(params)}")
    projected = per in (3, 5)
    if batch_first:
        input = input.transpose(0, 1)
    finals = [[] for _ in states]
    layer_input = input
    for layer in range(num_layers):
        outs = []
        for direction in range(directions):
            idx = layer * directions + direction
            w = list(params[idx * per:(idx + 1) * per])
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            xg = F.linear(layer_input, w[0], b_ih)
            res = recurrence(xg, w[1], b_hh, states[0][idx], states[1][idx] if len(states) > 1 else None,
                             w[-1] if projected else None, mode=mode, reverse=direction == 1)
            outs.append(res[0])
            for k in range(len(states)):
                finals[k].append(res[1 + k])
        layer_input = outs[0] if directions == 1 else cat(outs, 2)
        if dropout > 0 and train and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    output = layer_input.transpose(0, 1) if batch_first else layer_input
    return (output, *[stack(f, 0) for f in finals])


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first=False, *,
         batch_sizes=None):
    """``torch.lstm``: multi-layer LSTM over ``(T, B, in)`` (``(B, T, in)`` with ``batch_first``)
    from ``hx = (h0, c0)``; returns ``(output, h_n, c_n)``. ``batch_sizes`` (the packed
    overload's) refuses."""
    if isinstance(hx, Tensor) or batch_sizes is not None:  # the data overload puts batch_sizes at hx
        return _run("lstm", input, None, None, hx, None, None, None, None, None)
    return _run("lstm", input, list(hx), params, has_biases, num_layers, dropout, train, bidirectional,
                batch_first)


def _single_state(mode):
    def fn(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first=False):
        return _run(mode, input, [hx], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)

    fn.__name__ = fn.__qualname__ = mode
    fn.__doc__ = (f"``torch.{mode}``: multi-layer {'GRU' if mode == 'gru' else 'Elman RNN'} from ``hx`` "
                  "``(L*D, B, H)``; returns ``(output, h_n)``.")
    return fn


gru = _single_state("gru")
rnn_tanh = _single_state("rnn_tanh")
rnn_relu = _single_state("rnn_relu")


def _step(mode, input, states, w_ih, w_hh, b_ih, b_hh):
    xg = F.linear(input, w_ih, b_ih).unsqueeze(0)  # (1, B, G*H)
    return recurrence(xg, w_hh, b_hh, *states, mode=mode)[1:]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``torch.lstm_cell``: one LSTM step on ``(B, in)`` from ``hx = (h, c)``; returns ``(h', c')``."""
    h, c = _step("lstm", input, list(hx), w_ih, w_hh, b_ih, b_hh)
    return h, c


def _cell(mode):
    def fn(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        (h,) = _step(mode, input, [hx], w_ih, w_hh, b_ih, b_hh)
        return h

    fn.__name__ = fn.__qualname__ = f"{mode}_cell"
    fn.__doc__ = f"``torch.{mode}_cell``: one step on ``(B, in)`` from ``hx`` ``(B, H)``; returns ``h'``."
    return fn


gru_cell = _cell("gru")
rnn_tanh_cell = _cell("rnn_tanh")
rnn_relu_cell = _cell("rnn_relu")
