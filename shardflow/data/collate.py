"""``default_collate`` / ``default_convert``: turn a list of samples into a batch.

Rules (PyTorch's): Tensors are stacked along a new first dim; NumPy arrays are stacked into
a Tensor; NumPy scalars, Python ints (int64), floats (float64) and bools become 1-D
Tensors; strings/bytes stay a list; mappings are collated key by key; namedtuples field by
field; other sequences are transposed and collated position by position (returned as a
list, as PyTorch does). ``pad_collate`` additionally pads 1-D+ sequences of different
lengths (for ``BucketBatchSampler``).
"""

from __future__ import annotations

import collections.abc as abc
import copy

import numpy as np

from ..autograd.tensor import Tensor, _wrap

__all__ = ["default_collate", "default_convert", "pad_collate"]


def _stack(arrays) -> np.ndarray:
    first = arrays[0]
    for k, a in enumerate(arrays):
        if a.shape != first.shape:
            raise RuntimeError(
                f"default_collate: stack expects each sample to have the same shape, but "
                f"sample 0 has shape {tuple(first.shape)} and sample {k} has shape "
                f"{tuple(a.shape)}; pad them (collate_fn=shardflow.data.pad_collate) or use "
                "batch_size=1"
            )
    return np.stack(arrays)


def default_collate(batch):
    elem = batch[0]
    if isinstance(elem, Tensor):
        for k, b in enumerate(batch):
            if not isinstance(b, Tensor):  # torch.stack's TypeError (was: no attribute 'array')
                raise TypeError(
                    f"expected Tensor as element {k} in argument 0, but got {type(b).__name__} "
                    f"(default_collate: sample {k} of the batch is of type {type(b).__name__} where sample 0 "
                    "is a Tensor; return the same types from every __getitem__)")
        return _wrap(_stack([b.array for b in batch]))
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "SUO":
            raise TypeError(f"default_collate: cannot batch NumPy arrays of dtype {elem.dtype}")
        return _wrap(_stack(batch))
    if isinstance(elem, np.generic):
        return _wrap(np.asarray(batch))
    if isinstance(elem, bool):
        return _wrap(np.asarray(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return _wrap(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, float):
        return _wrap(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, str | bytes):
        # as PyTorch: the batch as given (a field of tuples collates to a tuple of strings)
        return batch
    if isinstance(elem, abc.Mapping):
        fields = {k: default_collate([d[k] for d in batch]) for k in elem}
        if isinstance(elem, abc.MutableMapping):  # keep the mapping's type (OrderedDict, ...)
            clone = copy.copy(elem)
            clone.update(fields)
            return clone
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        n = len(elem)
        if any(len(b) != n for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(s) for s in zip(*batch)]
    raise TypeError(
        f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem).__name__}"
    )


def default_convert(data):
    """Used when ``batch_size=None``: NumPy arrays become Tensors, recursively."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SUO":
        return _wrap(data)
    if isinstance(data, np.generic):
        return _wrap(np.asarray(data))
    if isinstance(data, abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data


def pad_collate(batch, padding_value=0):
    """Like ``default_collate`` but arrays of different lengths along dim 0 are right-padded
    with ``padding_value`` to the longest; returns what default_collate would, plus nothing
    else (lengths are recoverable by the caller from its own data)."""
    elem = batch[0]
    if isinstance(elem, Tensor | np.ndarray):
        arrays = [b.array if isinstance(b, Tensor) else np.asarray(b) for b in batch]
        if all(a.shape == arrays[0].shape for a in arrays):
            return _wrap(np.stack(arrays))
        longest = max(a.shape[0] for a in arrays)
        out = np.full((len(arrays), longest) + arrays[0].shape[1:], padding_value, dtype=arrays[0].dtype)
        for i, a in enumerate(arrays):
            out[i, : a.shape[0]] = a
        return _wrap(out)
    if isinstance(elem, abc.Mapping):
        return {k: pad_collate([d[k] for d in batch], padding_value) for k in elem}
    if isinstance(elem, abc.Sequence) and not isinstance(elem, str | bytes):
        return [pad_collate(list(s), padding_value) for s in zip(*batch)]
    return default_collate(batch)
