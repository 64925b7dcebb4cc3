"""Small helpers shared by the layer modules: tuple expansion (``_pair``) and factory kwargs."""

from __future__ import annotations

import collections.abc
from itertools import repeat

from ...autograd import Tensor
from ...ops.creation import empty as _empty
from ..parameter import Parameter


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def empty(*shape, device=None, dtype=None) -> Tensor:
    """An uninitialised float tensor (``dtype`` default: the default dtype) on ``device``
    (default: the default device, ``shardflow.set_default_device``): ``shardflow.empty``."""
    return _empty(*shape, device=device, dtype=dtype)


def full(shape, value, device=None, dtype=None) -> Tensor:
    t = empty(*shape, device=device, dtype=dtype)
    t.array[...] = value
    return t


def register_bias(module, bias: bool, shape: int | tuple, device=None, dtype=None) -> None:
    """``module.bias``: an uninitialised Parameter of ``shape`` when ``bias`` (the module's
    ``reset_parameters`` fills it), else registered as None (PyTorch's layout)."""
    if bias:
        shape = shape if isinstance(shape, tuple) else (shape,)
        module.bias = Parameter(empty(*shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)
