"""``MixedPrecisionPolicy``: PyTorch FSDP2's mixed-precision settings for ``fully_shard``.

A frozen dataclass with PyTorch's fields and defaults (``param_dtype``, ``reduce_dtype``,
``output_dtype`` = ``None``: no cast; ``cast_forward_inputs=True``). What each does, as in
PyTorch:

* ``param_dtype``: each unit's shards (the optimizer's parameters, in their own dtype, e.g.
  float32) are cast to ``param_dtype`` before the all-gather, so the gathered parameters
  that forward and backward compute with are ``param_dtype`` (and the all-gather moves
  ``param_dtype`` bytes). The parameters' gradients come out in ``param_dtype``.
* ``reduce_dtype``: the gradients are cast to it, packed and reduce-scattered (averaged) in
  it, then stored in the sharded parameters' dtype as ``.grad``. ``None`` reduces in
  ``param_dtype`` (or the parameters' dtype when that is ``None`` too).
* ``output_dtype``: floating tensors in a unit's forward output are cast to it.
* ``cast_forward_inputs`` (with a ``param_dtype``): floating tensors in a unit's forward
  arguments (positional and keyword, nested in lists, tuples, dicts) are cast to
  ``param_dtype``.

Casts are autograd ops, so gradients flow back through them in the matching dtypes. float16
and bfloat16 work on the CPU (half-precision MPI reductions run on a float32 copy, see
comm/mpi_buffers.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...autograd import Tensor
from ...backend.dtypes import as_dtype


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True

    def casts(self) -> dict:
        """The fields that ask for a cast (empty for the default policy)."""
        return {k: v for k, v in (("param_dtype", self.param_dtype), ("reduce_dtype", self.reduce_dtype),
                                  ("output_dtype", self.output_dtype)) if v is not None}

    def numpy_dtypes(self, label: str = "module") -> dict:
        """``{field: NumPy dtype or None}`` for the three dtype fields; a value that is not a
        floating dtype is refused, naming the field."""
        out = {"param_dtype": None, "reduce_dtype": None, "output_dtype": None}
        for k, v in self.casts().items():
            try:
                d = as_dtype(v)
            except (TypeError, ValueError, KeyError) as e:
                raise TypeError(f"fully_shard({label}): MixedPrecisionPolicy.{k}={v!r} is not a "
                                f"dtype ({e}); use e.g. torch.bfloat16 or torch.float32") from None
            if not d.is_floating_point:
                raise TypeError(f"fully_shard({label}): MixedPrecisionPolicy.{k} must be a floating "
                                f"dtype (float32, bfloat16, float16, float64), got {d}")
            out[k] = d.np
        return out


def _cast_floating(obj, dtype):
    """``obj`` with every floating Tensor in it (nested in lists, tuples, dicts) cast to
    ``dtype`` (an autograd op); everything else as it is."""
    if isinstance(obj, Tensor):
        return obj.to(dtype) if obj.is_floating_point() and obj.dtype != dtype else obj
    if isinstance(obj, tuple | list):
        return type(obj)(_cast_floating(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _cast_floating(v, dtype) for k, v in obj.items()}
    return obj


def cast_inputs_hook(dtype):
    """A forward pre-hook (``with_kwargs=True``) casting floating inputs to ``dtype``."""
    d = as_dtype(dtype)

    def hook(module, args, kwargs):
        return _cast_floating(tuple(args), d), _cast_floating(dict(kwargs), d)

    return hook


def cast_outputs_hook(dtype):
    """A forward hook casting floating outputs to ``dtype``."""
    d = as_dtype(dtype)

    def hook(module, args, output):
        return _cast_floating(output, d)

    return hook
