"""The recurrent part of RNN / LSTM / GRU layers: one ``Function`` per (layer, direction)
that runs the whole time loop forward and back-propagates through time on raw arrays.

The caller (``nn.modules.rnn``) computes the input projection for every time step at once,
``xg = x @ W_ih^T + b_ih`` of shape ``(T, B, G*H)`` — one GEMM, an ordinary ``linear`` in
the graph — and passes it here with ``W_hh`` ``(G*H, H)``, ``b_hh`` (or None) and the
initial state. Per step ``t`` (visited ``T-1 .. 0`` when ``reverse``), with
``a = xg[t] + h @ W_hh^T + b_hh`` split into PyTorch's gate order:

* ``rnn_tanh`` / ``rnn_relu``: ``h = act(a)``.
* ``lstm`` (gates i, f, g, o): ``c = sigmoid(f) * c + sigmoid(i) * tanh(g)``,
  ``h = sigmoid(o) * tanh(c)``; with a projection ``W_hr`` ``(P, H)`` (``LSTM(proj_size=P)``)
  ``h = (sigmoid(o) * tanh(c)) @ W_hr^T`` is ``(B, P)``, so ``W_hh`` is ``(4H, P)`` and ``h0``
  ``(B, P)`` while ``c`` stays ``(B, H)``.
* ``gru`` (gates r, z, n; ``b_hn`` stays inside the reset product as in PyTorch):
  ``r = sigmoid(xr + hr)``, ``z = sigmoid(xz + hz)``, ``n = tanh(xn + r * hn)``,
  ``h = n + z * (h_prev - n)`` where ``hr, hz, hn`` are the parts of ``h @ W_hh^T + b_hh``.

Forward saves the activated gates and the hidden states (and the cell states and
``tanh(c)`` for the LSTM, ``hn`` for the GRU). Backward walks the steps in reverse, keeping
the running ``dh`` (and ``dc``) as (B, H) arrays, and stores the pre-activation gate
gradients of every step; the weight gradient is then ONE GEMM over all steps,
``dW_hh = dA^T @ H_prev`` with ``(T*B, G*H)`` and ``(T*B, H)`` operands, and
``db_hh = sum(dA)``; ``dxg`` (the pre-activation gradients, in time order) flows back into
the input-projection ``linear``. With the projection, each step first turns the running
``dh`` ``(B, P)`` into ``dr = dh @ W_hr`` ``(B, H)`` (the gradient of ``o * tanh(c)``) and keeps
``dh`` for ``dW_hr = dH^T @ R``, again one GEMM over all steps (``R = o * tanh(c)`` rebuilt
from the saved gates, not stored). Without it the step pays one ``is None`` test.

Variable lengths (packed sequences): with ``batch_sizes`` (one count per time step,
non-increasing, the layout of a ``PackedSequence`` whose batch is sorted by decreasing
length) only the first ``batch_sizes[t]`` rows are live at step ``t``. The others carry
their state unchanged (forward: not yet started when reversed, already finished when not)
and get no gate gradient; in backward their ``dh``/``dc`` pass through the step untouched.
So ``h_n`` holds each sequence's state after its own last step, as in PyTorch.

Outputs: ``(out, h_n)`` — and ``c_n`` for the LSTM — where ``out`` is ``(T, B, H)`` (``P``) in time
order (rows past a sequence's end hold carried states; packing drops them). ``out`` is a view of the saved hidden states, so modifying it in place before
backward raises the usual "modified by an inplace operation" error (``save_output``).
"""

from __future__ import annotations

from ..autograd import Function, Tensor
from ..backend import get_array_module
from .elementwise import sigmoid_array

__all__: list[str] = []  # used by nn.modules.rnn; not a torch.* function

MODES = ("rnn_tanh", "rnn_relu", "lstm", "gru")
_GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


class Recurrence(Function):
    """``apply(xg, w_hh, b_hh, h0, c0, w_hr, mode=..., reverse=...)`` (see the module
    docstring); ``b_hh``, ``c0`` and ``w_hr`` may be None."""

    save_inputs = (1, 5)  # backward reads W_hh (and W_hr); everything else is saved below
    save_output = True  # ``out`` is a view of the saved hidden states

    def forward(self, xg, w_hh, b_hh, h0, c0, w_hr=None, *, mode, reverse=False,
                batch_sizes=None):
        xp = get_array_module(xg)
        T, B, GH = xg.shape
        H = GH // _GATES[mode]
        P = w_hh.shape[1]  # the size of h: H, or proj_size with the LSTM projection
        dt = xg.dtype
        self.mode, self.reverse, self.batch_sizes = mode, reverse, batch_sizes
        self.w_hh, self.w_hr = w_hh, w_hr
        # hs[t] is the state *before* time t when going forward, hs[t + 1] when reversed
        hs = xp.empty((T + 1, B, P), dtype=dt)
        hs[T if reverse else 0] = h0
        a = xp.empty((B, GH), dtype=dt)
        wT = w_hh.T
        if mode == "lstm":
            cs = xp.empty((T + 1, B, H), dtype=dt)
            cs[T if reverse else 0] = c0
            gates = xp.empty((T, B, GH), dtype=dt)
            tanh_c = xp.empty((T, B, H), dtype=dt)
            if w_hr is not None:
                w_hrT = w_hr.T
                r = xp.empty((B, H), dtype=dt)  # o * tanh(c) before the projection
        elif mode == "gru":
            gates = xp.empty((T, B, GH), dtype=dt)
            hn = xp.empty((T, B, H), dtype=dt)
        for t in _steps(T, reverse):
            prev, cur = (t + 1, t) if reverse else (t, t + 1)
            xp.matmul(hs[prev], wT, out=a)
            if b_hh is not None:
                a += b_hh
            if mode == "rnn_tanh":
                a += xg[t]
                xp.tanh(a, out=hs[cur])
            elif mode == "rnn_relu":
                a += xg[t]
                xp.maximum(a, 0, out=hs[cur])
            elif mode == "lstm":
                a += xg[t]
                g = gates[t]
                # sigmoid over all four gates at once (one pass of its ~8 ufuncs, not two),
                # then the g gate's tanh over its sigmoid: elementwise, the same values
                g[...] = sigmoid_array(a)
                xp.tanh(a[:, 2 * H:3 * H], out=g[:, 2 * H:3 * H])
                c = cs[cur]
                xp.multiply(g[:, H:2 * H], cs[prev], out=c)
                c += g[:, :H] * g[:, 2 * H:3 * H]
                xp.tanh(c, out=tanh_c[t])
                if w_hr is None:
                    xp.multiply(g[:, 3 * H:], tanh_c[t], out=hs[cur])
                else:
                    xp.multiply(g[:, 3 * H:], tanh_c[t], out=r)
                    xp.matmul(r, w_hrT, out=hs[cur])
            else:  # gru
                g = gates[t]
                x = xg[t]
                hn[t] = a[:, 2 * H:]
                a[:, :2 * H] += x[:, :2 * H]
                g[:, :2 * H] = sigmoid_array(a[:, :2 * H])
                n = g[:, 2 * H:]
                xp.multiply(g[:, :H], hn[t], out=n)
                n += x[:, 2 * H:]
                xp.tanh(n, out=n)
                h = hs[cur]
                xp.subtract(hs[prev], n, out=h)
                h *= g[:, H:2 * H]
                h += n
            if batch_sizes is not None and batch_sizes[t] < B:  # finished / not started rows
                live = int(batch_sizes[t])
                hs[cur][live:] = hs[prev][live:]
                if mode == "lstm":
                    cs[cur][live:] = cs[prev][live:]
        self.hs = hs
        out = hs[:T] if reverse else hs[1:]
        h_n = hs[0 if reverse else T].copy()
        if mode == "lstm":
            self.cs, self.gates, self.tanh_c = cs, gates, tanh_c
            return out, h_n, cs[0 if reverse else T].copy()
        if mode == "gru":
            self.gates, self.hn = gates, hn
        return out, h_n

    def backward(self, dout, dh_n, dc_n=None):
        if self.hs.dtype.kind == "c":
            # every step is holomorphic in its inputs (products, matmuls, tanh, sigmoid), so
            # torch's conjugate-Wirtinger gradient g * conj(J) is conj(J^T conj(g)): the real
            # recurrence below run on conjugated output gradients, its results conjugated
            conj = get_array_module(self.hs).conj
            grads = self._backward(conj(dout), conj(dh_n), None if dc_n is None else conj(dc_n))
            return tuple(None if g is None else conj(g) for g in grads)
        return self._backward(dout, dh_n, dc_n)

    def _backward(self, dout, dh_n, dc_n=None):
        mode, reverse, w, w_hr = self.mode, self.reverse, self.w_hh, self.w_hr
        hs = self.hs
        xp = get_array_module(hs)
        T, B, P = hs.shape[0] - 1, hs.shape[1], hs.shape[2]
        GH = w.shape[0]
        H = GH // _GATES[mode]
        dt = hs.dtype
        dA = xp.empty((T, B, GH), dtype=dt)  # d(h @ W_hh^T + b_hh), time order
        dxg = dA if mode != "gru" else xp.empty((T, B, GH), dtype=dt)
        dh = dh_n.astype(dt, copy=True)
        if mode == "lstm":
            dc = dc_n.astype(dt, copy=True)
            cs, gates, tanh_c = self.cs, self.gates, self.tanh_c
            if w_hr is not None:
                dH = xp.empty((T, B, P), dtype=dt)  # d(h_t) per step, for dW_hr
        elif mode == "gru":
            gates, hn = self.gates, self.hn
        batch_sizes = self.batch_sizes
        for t in (range(T) if reverse else range(T - 1, -1, -1)):
            prev, cur = (t + 1, t) if reverse else (t, t + 1)
            dh += dout[t]
            live = B if batch_sizes is None else int(batch_sizes[t])
            if live < B:  # carried rows (out[t] = h_prev there): gradients pass straight through
                keep_h = dh[live:].copy()
                if mode == "lstm":
                    keep_c = dc[live:].copy()
            da = dA[t]
            if mode == "rnn_tanh":
                h = hs[cur]
                xp.multiply(h, h, out=da)
                xp.subtract(1, da, out=da)
                da *= dh
            elif mode == "rnn_relu":
                xp.multiply(dh, hs[cur] > 0, out=da)
            elif mode == "lstm":
                g = gates[t]
                i, f, gg, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
                tc = tanh_c[t]
                if w_hr is None:
                    dr = dh
                else:  # h = r @ W_hr^T: dr = dh @ W_hr; dh is kept for dW_hr
                    dH[t] = dh
                    if live < B:
                        dH[t][live:] = 0
                    dr = dh @ w_hr
                dc += dr * o * (1 - tc * tc)
                xp.multiply(dc, gg, out=da[:, :H])
                da[:, :H] *= i * (1 - i)
                xp.multiply(dc, cs[prev], out=da[:, H:2 * H])
                da[:, H:2 * H] *= f * (1 - f)
                xp.multiply(dc, i, out=da[:, 2 * H:3 * H])
                da[:, 2 * H:3 * H] *= 1 - gg * gg
                xp.multiply(dr, tc, out=da[:, 3 * H:])
                da[:, 3 * H:] *= o * (1 - o)
                dc *= f
            else:  # gru
                g = gates[t]
                r, z, n = g[:, :H], g[:, H:2 * H], g[:, 2 * H:]
                dx = dxg[t]
                dn = dx[:, 2 * H:]
                xp.multiply(dh, 1 - z, out=dn)
                dn *= 1 - n * n  # d(pre-tanh n)
                xp.multiply(dn, hn[t], out=dx[:, :H])
                dx[:, :H] *= r * (1 - r)
                xp.subtract(hs[prev], n, out=dx[:, H:2 * H])
                dx[:, H:2 * H] *= dh
                dx[:, H:2 * H] *= z * (1 - z)
                da[:, :2 * H] = dx[:, :2 * H]
                xp.multiply(dn, r, out=da[:, 2 * H:])
                dh *= z  # the direct path h_prev -> h
            if live < B:
                da[live:] = 0
                if mode == "gru":
                    dxg[t][live:] = 0
            if mode == "gru":
                dh += da @ w
            else:
                dh = da @ w
            if live < B:
                dh[live:] = keep_h
                if mode == "lstm":
                    dc[live:] = keep_c
        need = self.needs_input_grad
        dw = db = dw_hr = None
        if need[1]:
            h_prev = hs[1:] if reverse else hs[:T]
            dw = dA.reshape(T * B, GH).T @ h_prev.reshape(T * B, P)
        if len(need) > 2 and need[2]:
            db = dA.sum(axis=(0, 1))
        dh0 = dh if need[3] else None
        dc0 = dc if mode == "lstm" and need[4] else None
        if w_hr is not None and need[5]:
            r_all = gates[:, :, 3 * H:] * tanh_c  # (T, B, H): o * tanh(c), rebuilt
            dw_hr = dH.reshape(T * B, P).T @ r_all.reshape(T * B, H)  # (P, H)
        return (dxg if need[0] else None), dw, db, dh0, dc0, dw_hr


def recurrence(xg: Tensor, w_hh: Tensor, b_hh, h0: Tensor, c0=None, w_hr=None, *, mode: str,
               reverse: bool = False, batch_sizes=None):
    """Run one recurrent layer direction; returns ``(out, h_n)`` or ``(out, h_n, c_n)``.
    ``batch_sizes``: live rows per step for variable-length batches; ``w_hr``: the LSTM
    projection ``(P, H)`` (see above)."""
    if mode not in MODES:
        raise ValueError(f"recurrence mode must be one of {MODES}, got {mode!r}")
    if (mode == "lstm") != (c0 is not None):
        raise ValueError(f"recurrence mode {mode!r}: c0 is {'required' if mode == 'lstm' else 'only for lstm'}")
    if w_hr is not None and mode != "lstm":
        raise ValueError(f"recurrence mode {mode!r}: w_hr (the projection) is only for lstm")
    if mode == "rnn_relu" and xg.dtype.is_complex:  # torch's relu (a clamp) has no complex form
        raise NotImplementedError("clamp is not supported for complex types")
    return Recurrence.apply(xg, w_hh, b_hh, h0, c0, w_hr, mode=mode, reverse=reverse,
                            batch_sizes=batch_sizes)
