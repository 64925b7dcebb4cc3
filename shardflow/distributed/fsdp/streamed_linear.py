"""A ``fully_shard``-ed ``nn.Linear`` whose weight gradient never exists whole.

Why: with one ``fully_shard`` unit per Linear (ZeRO-3's smallest units), the peak of a
backward on N ranks held, beside the sharded states (16Ψ/N), the gathered weight being
differentiated *and* its whole gradient (the largest GPT MLP weight: 5.3 MB each), then that
gradient again while its reduce-scatter was in flight and the next unit was gathered. Those
terms do not shrink with N (docs/ZERO.md, "Memory").

What: ``fully_shard(linear)`` gives the unit the forward below (``StreamedLinearForward``), which runs
the op's own ``Linear`` node (``ops/matmul.py``: the same forward arithmetic) as a subclass
whose backward

1. computes the input gradient ``gx = g @ W`` and the bias gradient first (the op's
   ``backward_weight_later``);
2. frees the gathered weight (``free_full_of``: its pages go back to the OS; the weight
   gradient needs only ``g`` and the input, never ``W``; the unit stays unsharded until its
   bias gradient is in, as the bias's gradient hooks expect a local parameter);
3. computes the weight gradient ``g^T @ x`` in row blocks, each block holding a slice of
   every rank's rows, and reduce-scatters (avg, non-blocking) each block as soon as it is
   made, straight into this rank's gradient shard (``FSDPParamGroup.
   reduce_weight_grad_in_blocks``); at most ``WINDOW`` blocks (``BLOCK_BYTES`` each) are in
   flight, the last ones finish with the unit's other reduce-scatters when backward reaches
   the next unit. So at most ``WINDOW`` blocks of the weight's gradient exist at a time;
4. returns ``(gx, None, gb)``: the engine accumulates no weight gradient (the weight's post-
   accumulate-grad hook does not fire; the unit counts the weight delivered itself), and the
   bias goes the usual way (its hook completes the unit).

Communication: the same bytes as one reduce-scatter of the whole gradient, in
``ceil(rows_per_rank / block_rows)`` collectives (in the same order on every rank: the
backward order is SPMD). Each block's elements are summed by the same reduce-scatter
as before, so the gradient shard differs from the whole-gradient path at most by the GEMM's
rounding on a column slice (tested equal to one process to 1e-6).

When the unit falls back to the plain ``F.linear`` (whole gradient, reduced as before): an
op hook other than the global-tensor route is installed (autocast, the profiler, a tracer:
they must see the ``linear`` op); the weight has a gradient or post-accumulate-grad hook of
the user's (it expects the whole gradient); the input is a global tensor, of another dtype
or not C-contiguous; the unit is the root or ran more than once in this forward (its weight
is still needed by the other use's backward); gradient sync is off or an unsynchronised
gradient is held for the weight (accumulation sums whole gradients); the weight's rows do
not divide evenly over the ranks; a non-host (CuPy) or non-float32/float64 unit.
"""

from __future__ import annotations

import numpy as np

from ...amp import is_autocast_enabled
from ...autograd import Tensor, dispatch, is_grad_enabled
from ...nn.modules.linear import Linear
from ...ops.matmul import Linear as LinearNode

__all__ = ["StreamedLinearForward", "is_plain_linear", "BLOCK_BYTES", "WINDOW"]

BLOCK_BYTES = 1 << 20  # one streamed block of a weight gradient (all ranks' rows of it)
WINDOW = 2  # streamed blocks in flight at most (FSDPParamGroup.reduce_weight_grad_in_blocks)
_STREAMED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def is_plain_linear(cls: type) -> bool:
    """``cls`` is ``nn.Linear`` or a subclass that keeps its forward (``F.linear``)."""
    return issubclass(cls, Linear) and cls.forward is Linear.forward


def _only_global_route() -> bool:
    """No op hook but the global-tensor route is installed, so the ``linear`` op would run its
    node as it is (the route calls the plain op for local tensors); autocast, the profiler and
    tracers compose themselves into the same slot and must see the op."""
    return dispatch.only_global_handler_active()


class StreamedLinearForward:
    """The forward of a ``fully_shard``-ed plain ``nn.Linear`` (mixed in before its class)."""

    def forward(self, input):
        st = self.__dict__["_fsdp_state"]
        w, b = self.weight, self.bias
        if is_grad_enabled():  # every use counts: a second one needs W in its own backward
            st.linear_calls += 1
        if not _streams(st, input, w, b):
            return super().forward(input)
        if b is None:
            return _StreamedLinearNode.apply(input, w, fsdp=(st, w))
        return _StreamedLinearNode.apply(input, w, b, fsdp=(st, w))


def _streams(st, x, w, b) -> bool:
    """Whether this call may take the streamed node (see the module docstring)."""
    g = st.group
    if (g is None or st.root is None or st is st.root.root_state or not is_grad_enabled()
            or not w.requires_grad or id(w) not in g.index or not g.on_host):
        return False
    if not (isinstance(x, Tensor) and x._spec is None and x.array.ndim >= 1):
        return False
    xa, wa = x.array, w.array
    if (xa.dtype != wa.dtype or wa.dtype not in _STREAMED_DTYPES or wa.ndim != 2
            or xa.shape[-1] != wa.shape[1] or type(xa) is not np.ndarray
            or not xa.flags.c_contiguous):  # (folding a strided input would copy it twice)
        return False
    if b is not None and (not isinstance(b, Tensor) or b.array.dtype != wa.dtype):
        return False
    if is_autocast_enabled("cpu") or is_autocast_enabled("cuda") or not _only_global_route():
        return False
    if st.own_hooks.get(id(w)) != (len(w._post_hooks or ()), len(w._hooks or ())):
        return False  # a hook of the user's wants W's whole gradient
    return g.rows_divide_evenly(w)


class _StreamedLinearNode(LinearNode):
    """The op's Linear node; its backward streams the weight gradient (module docstring)."""

    def forward(self, x, w, b=None, fsdp=None):
        self.fsdp = fsdp
        self.rows_in = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])  # (R, in), a view
        return super().forward(x, w, b)

    def backward(self, g):
        st, w = self.fsdp
        group = st.group
        if not (self.needs_input_grad[1] and st.linear_calls == 1 and st.sync
                and group.can_stream_grad(w)):
            return super().backward(g)
        grads, _ = self.backward_weight_later(g)  # gx (reads W), None, gb: W's last use
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])  # (R, out)
        x2 = self.rows_in
        group.free_full_of(w)  # W's gathered pages go now, before any gradient block exists
        if group.pending == len(group.trainable):  # the unit's first gradient: the previous
            st.root.finish_launched()              # unit's reduce-scatter is done first
        done = group.reduce_weight_grad_in_blocks(w, g2, x2, BLOCK_BYTES, WINDOW)
        if done:  # no bias (or a frozen one): the unit is complete
            st.root.unit_complete(st)
        return grads
