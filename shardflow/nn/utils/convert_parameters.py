"""``parameters_to_vector`` / ``vector_to_parameters`` (``torch.nn.utils``)."""

from __future__ import annotations

from ...autograd import Tensor, no_grad


def parameters_to_vector(parameters) -> Tensor:
    """Concatenate every parameter, flattened, into one 1-D tensor (differentiable)."""
    from ... import ops

    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector got an empty iterable of parameters")
    return ops.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` in place."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected a shardflow Tensor, but got {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise ValueError(f"vector has {vec.numel()} elements but the parameters need {total}")
    src = vec.array.reshape(-1)
    offset = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.array[...] = src[offset:offset + n].reshape(p.array.shape).astype(p.array.dtype, copy=False)
            p._version_counter[0] += 1
            offset += n
