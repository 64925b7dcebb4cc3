"""Activation checkpointing by recomputation (``shardflow.utils.checkpoint.checkpoint``, PyTorch's
path). Named ``recompute`` because "checkpoint" elsewhere in shardflow means saved state
(``checkpoint/``, ``distributed/checkpoint/``, ``shardflow checkpoint``).

Forward runs ``function`` under ``no_grad`` and keeps only its inputs. Backward re-runs it
with gradients on (same RNG state, so dropout masks repeat), then backpropagates the
incoming gradient through the recomputed graph. Memory: one segment's activations at a
time instead of all of them; cost: one extra forward of the segment.

The two PyTorch variants differ where no tensor argument requires a gradient. Reentrant
(``use_reentrant=True``, and ``None``, which warns as PyTorch 2.13 does) then leaves the
segment out of the graph: its parameters get no gradient and PyTorch warns "None of the
inputs have requires_grad=True". Non-reentrant (``use_reentrant=False``) still gives the
parameters their gradients: here the node gets one extra input, a 0-d leaf that requires
grad (an anchor), so it is in the graph and its backward (which fills the parameters'
``.grad`` through the recomputed graph) runs. Non-reentrant also passes keyword arguments
to ``function``; reentrant refuses them with PyTorch's ValueError.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np

from ..backend import random as _random
from . import grad_mode
from .engine import run_backward
from .function import Function
from .tensor import Tensor, _wrap


class CheckpointError(RuntimeError):
    """PyTorch's error for a checkpointed region whose recomputation differs from its first
    run (exported so that ``except torch.utils.checkpoint.CheckpointError`` works)."""


class _Checkpoint(Function):
    save_inputs = None

    def torch_name(self) -> str:
        """torch's reentrant checkpoint is the autograd.Function ``CheckpointFunction``; its
        non-reentrant one leaves the segment's own last node in the graph (``MulBackward0``
        ...), which this single recomputing node cannot name, so it keeps its own."""
        return "CheckpointFunctionBackward" if self.__dict__.get("reentrant", False) else "_CheckpointBackward0"

    def forward(self, *arrays, run_function=None, tensor_mask=None, others=None, preserve_rng_state=True,
                anchored=False, contexts=None, check=True, reentrant=False):
        self.reentrant = reentrant
        self.run_function = run_function
        self.anchored = anchored
        arrays = arrays[1:] if anchored else arrays  # the anchor is no argument of the function
        self.arrays = arrays
        self.tensor_mask = tensor_mask
        self.others = others
        self.rng_state = _random.get_rng_state() if preserve_rng_state else None
        forward_ctx, self.recompute_ctx = contexts if contexts is not None else (None, None)
        # the context first: torch's non-reentrant forward runs with grad mode as it was
        with (forward_ctx if forward_ctx is not None else contextlib.nullcontext()), grad_mode.no_grad():
            out = run_function(*self._rebuild_args(arrays, requires_grad=False))
        outs = out if isinstance(out, tuple) else (out,)
        self.meta = tuple((tuple(o.shape), o.dtype) for o in outs) if check else None
        if isinstance(out, tuple):
            self.n_out = len(out)
            return tuple(o.array for o in out)
        self.n_out = 0
        return out.array

    def _rebuild_args(self, arrays, requires_grad):
        args = list(self.others)
        leaves = []
        it = iter(arrays)
        for i, is_tensor in enumerate(self.tensor_mask):
            if is_tensor:
                a = next(it)
                t = _wrap(a, requires_grad and a.dtype.kind in "fV")
                leaves.append(t)
                args[i] = t
        self.leaves = leaves
        return args

    def backward(self, *grads):
        saved_state = None
        if self.rng_state is not None:
            saved_state = _random.get_rng_state()
            _random.set_rng_state(self.rng_state)
        ctx = self.recompute_ctx if self.recompute_ctx is not None else contextlib.nullcontext()
        try:
            with grad_mode.enable_grad(), ctx:
                out = self.run_function(*self._rebuild_args(self.arrays, requires_grad=True))
        finally:
            if saved_state is not None:
                _random.set_rng_state(saved_state)
        outs = out if isinstance(out, tuple) else (out,)
        if self.meta is not None:  # determinism_check="default": the recomputation's metadata
            again = tuple((tuple(o.shape), o.dtype) for o in outs)
            if again != self.meta:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values have different metadata than during "
                    f"the forward pass: forward gave (shape, dtype) {self.meta}, the recomputation "
                    f"{again}. The checkpointed function must compute the same thing when re-run "
                    "(pass determinism_check='none' to skip this check).")
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if pairs:
            run_backward([o for o, _ in pairs], [g for _, g in pairs], retain_graph=False)
        result = [None] if self.anchored else []
        for leaf in self.leaves:
            result.append(None if leaf.grad is None else leaf.grad.array)
        return tuple(result)


def noop_context_fn():
    """``context_fn``'s default: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_DETERMINISM_CHECKS = ("default", "none")


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, preserve_rng_state: bool = True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in
    backward (module docstring: the reentrant and non-reentrant variants). Non-reentrant
    only, as torch: ``context_fn()`` gives the two context managers the forward and the
    recomputation run in; ``determinism_check="default"`` compares the recomputed outputs'
    shapes and dtypes with the forward's (``CheckpointError``), ``"none"`` skips it;
    ``debug`` is accepted (torch then logs the ops run; shardflow has no op log to add)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True.", stacklevel=2)
        use_reentrant = True
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not use_reentrant and determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, "
                         f"but got {determinism_check}")
    if kwargs:
        function = functools.partial(function, **kwargs)
    tensor_mask = tuple(isinstance(a, Tensor) for a in args)
    others = [None if isinstance(a, Tensor) else a for a in args]
    tensors = [a for a in args if isinstance(a, Tensor)]
    anchored = False
    if grad_mode.is_grad_enabled() and not any(t.requires_grad for t in tensors):
        if use_reentrant:
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        else:
            tensors.insert(0, _wrap(np.zeros((), np.float32), True))
            anchored = True
    return _Checkpoint.apply(
        *tensors, run_function=function, tensor_mask=tensor_mask, others=others,
        preserve_rng_state=preserve_rng_state, anchored=anchored,
        contexts=None if use_reentrant else context_fn(),
        check=not use_reentrant and determinism_check == "default", reentrant=bool(use_reentrant),
    )
