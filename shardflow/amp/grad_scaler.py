"""``GradScaler``: dynamic loss scaling, with PyTorch's ``torch.amp.GradScaler`` semantics.

Per iteration: ``scale(loss)`` multiplies the loss by the current scale ``S`` (so small
float16 gradients do not underflow); ``unscale_(optimizer)`` (explicit, or inside ``step``)
multiplies every gradient of the optimizer by ``1/S`` (computed in float64, rounded to
float32, as PyTorch does) and records whether any gradient holds an inf or NaN;
``step(optimizer)`` calls ``optimizer.step()`` only when none did; ``update()`` then sets
``S *= backoff_factor`` after a skipped step (and restarts the growth count), or, after
``growth_interval`` consecutive good steps, ``S *= growth_factor`` when the result is
finite. The stage checks (``unscale_`` twice, ``step`` twice without ``update``) raise
PyTorch's errors.

``device='cuda'`` (the default, as in PyTorch) on a machine without CUDA warns and disables
the scaler, exactly as PyTorch does: ``step`` then just calls ``optimizer.step()``, so a GPU
script runs unchanged on a CPU. ``GradScaler('cpu')`` really scales.

The gradients are unscaled in place on their arrays.

Data parallelism: every rank must take the same skip decision, or the replicas drift apart.
Averaged gradients usually carry an inf to every rank, but not always (an inf produced after
the all-reduce, a sharded optimizer whose ranks hold different gradient slices, a NaN that
one rank's reduction order hides). So when a ``process_group`` is given, or when data
parallel is on (``DistributedDataParallel`` announces it) in a world of more than one rank,
``unscale_`` all-reduces the found-inf flags (``MAX``, one 4-byte collective per step; as
PyTorch's ``ShardedGradScaler``) and every rank skips the step if any rank saw an inf/NaN,
and halves its scale in ``update``.

Minimum scale (shardflow's addition): if a backoff would take the scale below ``min_scale``
(default ``2**-24``, the smallest float16 subnormal; about 40 skipped steps in a row from
``2**16``), ``update`` raises a ``RuntimeError`` that explains it (the gradients are inf/NaN
at every scale: the forward itself overflows or produces NaN) and lists the fixes, before
changing the scale. ``min_scale=None`` turns the check off (PyTorch's behaviour).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy as np

from ..autograd import Tensor, no_grad
from ..autograd.tensor import _wrap
from ..backend import device as _device
from ..backend import get_array_module, to_device
from ..backend.xp import cuda_is_available

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """See the module docstring. Arguments as ``torch.amp.GradScaler``."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True,
                 process_group=None, min_scale: float | None = 2.0**-24) -> None:
        self._device = str(device)
        self._process_group = process_group
        self._min_scale = min_scale
        self._enabled = bool(enabled)
        if self._device == "cuda" and self._enabled and not cuda_is_available():
            # torch's words, whichever spelling built it; step() then just calls optimizer.step()
            # (GradScaler('cpu') scales on the CPU)
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError(f"The growth factor must be > 1.0, got {growth_factor}.")
            if backoff_factor >= 1.0:
                raise AssertionError(f"The backoff factor must be < 1.0, got {backoff_factor}.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None  # made by the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: int | None = None
            self._skips_in_row = 0
            self._per_optimizer_states: dict[int, dict] = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ scale
    def _lazy_init(self, dev) -> None:
        self._scale = _wrap(to_device(np.array(self._init_scale, dtype=np.float32), _device(dev)))
        self._growth_tracker = self._init_growth_tracker

    def _check_scale_growth_tracker(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                "use scaler.scale(loss or outputs) earlier in the iteration."
            )

    def scale(self, outputs):
        """``outputs * scale`` for a Tensor, or for every Tensor of a (nested) list/tuple/iterable."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)

        def apply(val):
            if isinstance(val, Tensor):
                return self.scale(val)
            if isinstance(val, list | tuple):
                return type(val)(apply(v) for v in val)
            if hasattr(val, "__iter__") and not isinstance(val, str | bytes):
                return map(apply, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    # ------------------------------------------------------------------ unscale / step
    def _unscale_grads_(self, optimizer, inv_scale: float, allow_fp16: bool) -> dict:
        """Multiply the optimizer's gradients by ``inv_scale`` in place; return, per device,
        a 0-dim float32 tensor that is 1.0 when a gradient there held an inf or NaN. A
        complex gradient raises torch's NotImplementedError (its unscale kernel has no complex
        form), before any gradient is unscaled."""
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = getattr(p, "grad", None)
                if g is not None and g.array.dtype.kind == "c":
                    name = "ComplexDouble" if g.array.dtype == np.complex128 else "ComplexFloat"
                    raise NotImplementedError(
                        f"\"_amp_foreach_non_finite_check_and_unscale_{g.device.type}\" not "
                        f"implemented for '{name}'")
        found: dict = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if not isinstance(p, Tensor):
                        raise AssertionError(f"expected param to be a Tensor, got {type(p).__name__}")
                    if p.grad is None:
                        continue
                    g = p.grad.array
                    if not allow_fp16 and g.dtype == np.float16:
                        raise ValueError(
                            "Attempting to unscale FP16 gradients. (Keep the parameters in float32 "
                            "and let autocast produce float16 activations.)"
                        )
                    xp = get_array_module(g)
                    bad = not bool(xp.isfinite(g).all())
                    if inv_scale != 1.0:
                        xp.multiply(g, g.dtype.type(inv_scale), out=g)
                        p.grad._bump_version()
                    dev = p.grad.device
                    if dev not in found:
                        found[dev] = _wrap(to_device(np.array(0.0, np.float32), dev))
                    if bad:
                        found[dev].array[...] = 1.0
        return found

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale (once per ``step``); see the module docstring."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(np.float32(1.0 / np.float64(self._scale.item())))  # PyTorch: reciprocal in fp64
        found = self._unscale_grads_(optimizer, inv_scale, allow_fp16=False)
        group = self._sync_group()
        if group is not None:
            flag = np.array([max((v.item() for v in found.values()), default=0.0)], np.float32)
            group.all_reduce(flag, "max")
            for v in found.values():
                v.array[...] = flag[0]
            if not found and flag[0] > 0:  # no local grads, but another rank saw an inf
                found[self._scale.device] = _wrap(to_device(flag.reshape(()), self._scale.device))
        state["found_inf_per_device"] = found
        state["stage"] = OptState.UNSCALED

    def _sync_group(self):
        """The group whose ranks must agree on skipping (module docstring), or None."""
        if self._process_group is not None:
            return self._process_group if self._process_group.size > 1 else None
        from .. import comm as _comm  # here, not at import: a one-process program never needs it

        info = _comm.world_info()
        if info.initialized and info.data_parallel and info.world_size > 1:
            return _comm.get_world()
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless ``unscale_`` ran), then ``optimizer.step(*args, **kwargs)`` unless a
        gradient held an inf/NaN. Returns what ``optimizer.step`` returned, or None if skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError(
                "No inf checks were recorded for this optimizer: none of its parameters has a "
                ".grad. Call scaler.scale(loss).backward() before scaler.step(optimizer)."
            )
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off after a skipped step, grow after ``growth_interval`` good ones (module
        docstring); or set the scale to ``new_scale`` (a float or a 1-element tensor)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.array[...] = new_scale
            else:
                reason = ("new_scale should be a float or a 1-element tensor with "
                          "requires_grad=False on the scaler's device.")
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._scale.device.type:
                    raise AssertionError(reason)
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.array[...] = new_scale.item()
        else:
            found = [v.item() for s in self._per_optimizer_states.values()
                     for v in s["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(sum(found) > 0)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _update_scale(self, found_inf: bool) -> None:
        """``torch._amp_update_scale_``: float32 arithmetic on the scale."""
        scale = self._scale.array
        if found_inf:
            new = np.float32(float(scale) * self._backoff_factor)
            if self._min_scale is not None and new < self._min_scale:
                raise RuntimeError(
                    f"GradScaler: the loss scale would fall to {float(new):.3g}, below min_scale="
                    f"{self._min_scale:.3g}, after {self._skips_in_row + 1} skipped steps in a row: the "
                    "gradients hold an inf or NaN whatever the scale, so the overflow is not caused by "
                    "the scale; the forward pass or the loss itself "
                    "produces inf/NaN. Fixes: check the loss and inputs for NaN (torch-style "
                    "anomaly checks, smaller learning rate); autocast with dtype=bfloat16, whose "
                    "range is float32's, needs no GradScaler; or start lower "
                    "(GradScaler(init_scale=2.0**8)); or pass min_scale=None to back off without "
                    "a floor (PyTorch's behaviour). The scale was left unchanged."
                )
            scale[...] = new
            self._growth_tracker = 0
            self._skips_in_row += 1
            return
        self._skips_in_row = 0
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            with np.errstate(over="ignore"):
                grown = np.float32(float(scale) * self._growth_factor)
            if np.isfinite(grown):
                scale[...] = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    # ------------------------------------------------------------------ accessors and state
    def get_scale(self) -> float:
        """The current scale (``init_scale`` before the first ``scale``; 1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker`` (PyTorch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.array[...] = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning of an iteration, "
                    "or at the end after scaler.update()."
                )
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_process_group"] = None  # a communicator does not travel; pass it again
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
