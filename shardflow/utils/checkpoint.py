"""``shardflow.utils.checkpoint``: activation checkpointing (PyTorch's path).

``checkpoint`` recomputes one function's activations in backward (``autograd/recompute.py``).
``checkpoint_sequential`` splits a sequence of modules/functions into ``segments`` runs of
``len // segments`` and checkpoints every run but the last, which runs normally (its
activations are needed at once by backward), exactly PyTorch's split.
"""

from __future__ import annotations

import warnings

from ..autograd.recompute import CheckpointError, checkpoint, noop_context_fn  # noqa: F401 (torch's names)


def _run_segment(functions, start: int, end: int):
    def forward(x):
        for j in range(start, end + 1):
            x = functions[j](x)
        return x

    return forward


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of callables) on ``input``,
    checkpointing all segments but the last. ``use_reentrant=None`` warns as PyTorch does
    and means True (both modes recompute the same way here); ``preserve_rng_state`` is the
    one other keyword."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not isinstance(functions, list | tuple) and hasattr(functions, "children"):
        functions = list(functions.children())  # an nn.Sequential: its layers in order
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(_run_segment(functions, start, end), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return _run_segment(functions, end + 1, len(functions) - 1)(input)


__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn", "set_checkpoint_debug_enabled"]


class set_checkpoint_debug_enabled:
    """``torch.utils.checkpoint.set_checkpoint_debug_enabled(enabled)``: a context manager that
    overrides every checkpoint's ``debug`` flag in torch. shardflow's checkpoint has no op log,
    so the flag changes nothing that runs and nothing is recorded."""

    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
