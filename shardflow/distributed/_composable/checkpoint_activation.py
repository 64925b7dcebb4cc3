"""``torch.distributed._composable.checkpoint(module)``: activation checkpointing applied to a
module in place (no wrapper, parameter names unchanged), torch's non-reentrant algorithm.

A forward pre-hook enters saved-tensor hooks (``autograd.graph.saved_tensors_hooks``) for the
module's forward and the forward hook leaves them: every tensor an op in the module saves for
backward is replaced by a handle (its position in the forward's order), so the activations
are freed after forward. The first time backward unpacks a handle, the module's forward is run
again with its original arguments (grad mode on, the RNG state of the first run restored, so
dropout masks repeat; the hooks below off for that run), capturing what each op saves in the
same order; every handle then unpacks to its recomputed value. Memory: the module's
activations are held during backward only; cost: one extra forward.

Arguments as torch's: ``use_reentrant=True`` is refused (torch's NotImplementedError, naming
``torch.utils.checkpoint.checkpoint``); ``preserve_rng_state``; ``context_fn`` (two context
managers: around the first forward and around the recomputation); ``determinism_check``
(``"default"``: the recomputation must save as many tensors, of the same shapes and dtypes,
else ``CheckpointError``; ``"none"``: not checked); ``early_stop`` (torch stops recomputing
once every saved tensor is back; here the forward always runs to its end, same values);
``debug=True`` (torch's operator trace on a failed check) is refused. Other keywords raise
torch's ValueError.
"""

from __future__ import annotations

from contextlib import nullcontext

from ...autograd import enable_grad
from ...autograd.graph import saved_tensors_hooks
from ...backend import random as _random

__all__ = ["checkpoint", "CheckpointError"]

_STATE = "_composable_checkpoint_state"


class CheckpointError(RuntimeError):
    """torch.utils.checkpoint.CheckpointError: the recomputation differed from the forward."""


class _State:
    def __init__(self):
        self.enable_hook = True
        self.frames = []  # the open forwards' (frame, hooks, user context), innermost last


class _Frame:
    """One forward of the module: what it was called with, and its recomputed saves."""

    def __init__(self, module, args, kwargs, rng_state, options):
        self.module, self.args, self.kwargs = module, args, kwargs
        self.rng_state = rng_state
        self.options = options
        self.metadata = []  # (shape, dtype) of each packed tensor, in order
        self.recomputed = None

    def pack(self, t):
        self.metadata.append((tuple(t.shape), t.dtype))
        return (self, len(self.metadata) - 1)

    def recompute(self):
        captured = []
        state = self.module.__dict__[_STATE]
        current = _random.get_rng_state() if self.rng_state is not None else None
        _, recompute_ctx = self.options["contexts"]()
        state.enable_hook = False
        try:
            if self.rng_state is not None:
                _random.set_rng_state(self.rng_state)
            with recompute_ctx, enable_grad(), saved_tensors_hooks(lambda t: captured.append(t) or t,
                                                                   lambda t: t):
                self.module(*self.args, **self.kwargs)
        finally:
            state.enable_hook = True
            if current is not None:
                _random.set_rng_state(current)
        if self.options["determinism_check"] == "default":
            got = [(tuple(t.shape), t.dtype) for t in captured]
            if got != self.metadata:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have different "
                    f"metadata than during the forward pass: the forward saved {len(self.metadata)} tensors "
                    f"{self.metadata}, the recomputation {len(got)} {got}. (fix: make the module's forward "
                    "deterministic given its inputs and RNG state, or pass determinism_check='none')")
        self.recomputed = captured


def _unpack(handle):
    frame, index = handle
    if frame.recomputed is None:
        frame.recompute()
    return frame.recomputed[index]


def checkpoint(module, **kwargs):
    """Make ``module``'s forward recompute its activations in backward (module docstring);
    returns ``module``."""
    if kwargs.pop("use_reentrant", False):
        raise NotImplementedError("use_reentrant=True is not supported in composable checkpoint. Please "
                                  "use torch.utils.checkpoint.checkpoint instead.")
    preserve_rng_state = kwargs.pop("preserve_rng_state", True)
    context_fn = kwargs.pop("context_fn", None)
    determinism_check = kwargs.pop("determinism_check", "default")
    debug = kwargs.pop("debug", False)
    kwargs.pop("early_stop", True)  # a speed-up with the same values (module docstring)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if debug:
        raise NotImplementedError("checkpoint(debug=True): the operator trace of a failed determinism check "
                                  "is not built in shardflow")
    if _STATE in module.__dict__:
        raise RuntimeError("Each distinct composable distributed API can only be applied to a module once. "
                           f"checkpoint has already been applied to the following module:\n{module}")
    options = {"determinism_check": determinism_check,
               "contexts": context_fn if context_fn is not None else (lambda: (nullcontext(), nullcontext()))}
    state = _State()
    module.__dict__[_STATE] = state

    def forward_pre_hook(mod, args, kw):
        if not state.enable_hook:
            return None
        frame = _Frame(mod, args, kw, _random.get_rng_state() if preserve_rng_state else None, options)
        forward_ctx, _ = options["contexts"]()
        hooks = saved_tensors_hooks(frame.pack, _unpack)
        forward_ctx.__enter__()
        hooks.__enter__()
        state.frames.append((hooks, forward_ctx))
        return None

    def forward_hook(mod, args, kw, output):
        if not state.enable_hook or not state.frames:
            return None
        hooks, forward_ctx = state.frames.pop()
        hooks.__exit__(None, None, None)
        forward_ctx.__exit__(None, None, None)
        return None

    module.register_forward_pre_hook(forward_pre_hook, with_kwargs=True)
    module.register_forward_hook(forward_hook, with_kwargs=True, always_call=True)
    return module
