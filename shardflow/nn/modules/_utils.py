"""Small helpers shared by the layer modules: tuple expansion (``_pair``) and factory kwargs."""

from __future__ import annotations

import collections.abc
from itertools import repeat

from ...autograd import Tensor
from ...backend import as_dtype, dtypes, get_default_device, new_array
from ...backend import device as _device


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
    (default: the default device, ``shardflow.set_default_device``)."""
    d = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    dev = get_default_device() if device is None else _device(device)
    return Tensor(new_array(dev, lambda xp: xp.empty(shape, dtype=d.np)))


def full(shape, value, device=None, dtype=None) -> Tensor:
    t = empty(*shape, device=device, dtype=dtype)
    t.array[...] = value
    return t
