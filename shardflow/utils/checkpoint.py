"""``shardflow.utils.checkpoint``: activation checkpointing (PyTorch's path).

``checkpoint`` recomputes one function's activations in backward (``autograd/recompute.py``).
``checkpoint_sequential`` splits a sequence of modules/functions into ``segments`` runs of
``len // segments`` and checkpoints every run but the last, which runs normally (its
activations are needed at once by backward), exactly PyTorch's split.

torch's helper names live here too: ``detach_variable``, ``check_backward_validity``,
``get_device_states``/``set_device_states`` (device RNG states: a CPU-only process has none, so
torch too returns ``([], [])`` for CPU tensors), ``DefaultDeviceType``,
``set_checkpoint_early_stop`` (torch stops a non-reentrant recomputation once it has the tensors
backward needs; shardflow recomputes the whole region, so the flag changes what runs, never
values), ``CheckpointFunction`` (the reentrant variant as an autograd Function) and the selective
checkpointing names (``checkpoint_selective.py``).
"""

from __future__ import annotations

import contextlib
import warnings

from ..autograd import Tensor
from ..autograd.recompute import CheckpointError, checkpoint, noop_context_fn  # noqa: F401 (torch's names)
from .checkpoint_selective import (  # noqa: F401 (torch's names)
    CheckpointPolicy,
    SelectiveCheckpointContext,
    create_selective_checkpoint_contexts,
)


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


__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn", "set_checkpoint_debug_enabled",
           "CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "detach_variable", "check_backward_validity", "get_device_states", "set_device_states",
           "DefaultDeviceType", "set_checkpoint_early_stop", "CheckpointFunction"]


def detach_variable(inputs):
    """A tuple like ``inputs`` whose tensors are detached copies keeping ``requires_grad``
    (what reentrant checkpointing hands the recomputation); other items pass through."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """Warn as torch does when no tensor in ``inputs`` requires a gradient (a reentrant
    checkpoint over them gives no gradients)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _device_ids(args, out):
    for a in args:
        if isinstance(a, Tensor):
            if a.device.type not in ("cpu", "meta"):
                out.append(a.get_device())
        elif isinstance(a, list | tuple):
            _device_ids(a, out)
        elif isinstance(a, dict):
            _device_ids(list(a.values()), out)
    return out


def get_device_states(*args):
    """``(device_ids, rng_states)`` of the accelerator devices the tensors in ``args`` are on;
    ``([], [])`` when every tensor is on the CPU (its RNG state is saved separately)."""
    ids = _device_ids(args, [])
    if not ids:
        return [], []
    from .. import cuda  # an accelerator tensor exists: its module is loaded already

    return ids, [cuda.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the RNG states ``get_device_states`` returned (nothing to do for none)."""
    if not devices:
        return
    if device_type not in (None, "cuda"):
        raise ValueError(f"set_device_states: device_type={device_type!r} has no RNG state in "
                         "shardflow; expected None or 'cuda'")
    from .. import cuda

    for d, s in zip(devices, states, strict=True):
        cuda.set_rng_state(s, d)


class DefaultDeviceType:
    """The device type checkpointing uses when no tensor is on an accelerator: torch's
    default is the current accelerator's type, else ``"cpu"``."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            from .. import accelerator

            acc = accelerator.current_accelerator(True)
            DefaultDeviceType._default_device_type = acc.type if acc is not None else "cpu"
        return DefaultDeviceType._default_device_type


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Context manager: whether non-reentrant checkpoints begun inside stop recomputing early.
    shardflow always recomputes the whole region (the values are the same either way)."""
    yield


class CheckpointFunction:
    """torch's reentrant checkpoint as an autograd Function:
    ``CheckpointFunction.apply(run_function, preserve_rng_state, *args)`` is
    ``checkpoint(run_function, *args, use_reentrant=True, preserve_rng_state=...)``."""

    @staticmethod
    def apply(run_function, preserve_rng_state, *args):
        return checkpoint(run_function, *args, use_reentrant=True, preserve_rng_state=preserve_rng_state)


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
