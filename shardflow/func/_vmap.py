"""``torch.func.vmap`` as a loop over the mapped dimension.

Algorithm: the positional arguments are flattened as a pytree; ``in_dims`` (an int, None, or
a nested tuple that is a prefix of the arguments' structure) is broadcast to one entry per
leaf. For each ``b`` in ``range(batch_size)`` every mapped leaf is replaced by
``leaf.select(in_dim, b)`` (a differentiable view; None-mapped leaves and ``kwargs`` pass
unchanged) and ``func`` is called; the per-sample outputs are flattened, and each output leaf
is ``stack``-ed along its ``out_dims`` entry. Nesting is plain nesting of loops.

This is **not** torch's batching-rule vmap: ``func`` runs ``batch_size`` times, so the cost
is that of a Python loop over samples (correct for any ``func``, but no faster than one).
Consequences: a batch size of 0 cannot be mapped (there is no call to learn the output's
shape from); an output with ``out_dims=None`` must be the same for every sample (torch
decides "batched or not" by tracking; here equal values are accepted).

``randomness`` is checked against shardflow's one generator (``backend/random.py``, shared by
the CPU and CUDA paths): ``'error'`` raises as torch does when a call changed its state;
``'same'`` restores the state before each sample so all samples draw the same numbers;
``'different'`` lets them draw in turn. Draws from an explicit ``generator=`` object are not
seen by the check.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import ops
from ..autograd.tensor import Tensor
from ..backend import random as backend_random
from ..utils._pytree import SUPPORTED_NODES, _node_type, tree_flatten, tree_unflatten
from ._nesting import func_name

__all__ = ["vmap"]


def _broadcast_to_and_flatten(prefix, spec):
    """One entry of ``prefix`` per leaf of ``spec`` (``prefix`` is a prefix tree of it), or None
    when the structures are not compatible."""
    node = _node_type(prefix)
    if node is None:
        return [prefix] * spec.num_leaves
    if spec.is_leaf():
        return None
    children, context = SUPPORTED_NODES[node].flatten_fn(prefix)
    if type(prefix) is not spec.type or len(children) != spec.num_children or context != spec.context:
        return None
    flat = []
    for child, child_spec in zip(children, spec.children_specs):
        got = _broadcast_to_and_flatten(child, child_spec)
        if got is None:
            return None
        flat.extend(got)
    return flat


def _check_out_dims(out_dims, func) -> None:
    leaves = [out_dims] if isinstance(out_dims, int) else tree_flatten(out_dims)[0]
    for x in leaves:
        if x is not None and not isinstance(x, int):
            raise ValueError(f"vmap({func_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                             "a python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


def _process_inputs(func, in_dims, args):
    name = func_name(func)
    if not isinstance(in_dims, int | tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if in_dim is not None and (not isinstance(in_dim, int) or isinstance(in_dim, bool)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if in_dim is not None and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if in_dim is not None and not -arg.dim() <= in_dim < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, "
                             f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError(f"vmap({name}): the mapped dimension has size 0; shardflow's vmap calls {name} once per "
                         "sample and cannot learn the output's shape from no call (map a non-empty dimension)")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _flat_out_dims(func, out_dims, first_output, spec):
    def incompatible():
        raise ValueError(f"vmap({func_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                         f"with the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {spec}.")

    if isinstance(first_output, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = _broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        incompatible()
    return flat


def _same_values(values) -> bool:
    first = values[0]
    for v in values[1:]:
        if isinstance(first, Tensor):
            if not isinstance(v, Tensor) or tuple(v.shape) != tuple(first.shape):
                return False
            if not bool((v.detach() == first.detach()).all()):
                return False
        elif v is not first and v != first:
            return False
    return True


def _combine(func, samples, out_dim):
    """The per-sample values of one output leaf, stacked along ``out_dim``."""
    name = func_name(func)
    if out_dim is None:
        if not _same_values(samples):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return samples[0]
    for s in samples:
        if not isinstance(s, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(s)}. Did you "
                             "mean to set out_dims= to None for output?")
    rank = samples[0].dim() + 1
    if not -rank <= out_dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got "
                         f"{out_dim})")
    return ops.stack(samples, dim=out_dim)


def _state_changed(before) -> bool:
    after = backend_random.get_rng_state()
    return not np.array_equal(np.asarray(before), np.asarray(after))


def _raise_random_in_error_mode():
    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the 'same' "
                       "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


_active = [0]  # how many vmap loops are running: debug_unwrap cannot give torch's batched tensor inside one


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``torch.func.vmap``: ``func`` mapped over dimension ``in_dims`` of its inputs, outputs
    stacked along ``out_dims``; computed as a loop over samples (module docstring).
    ``chunk_size`` is validated; the loop already runs one sample at a time."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        batch_size, flat_in_dims, flat_args, args_spec = _process_inputs(func, in_dims, args)
        start_state = backend_random.get_rng_state()
        per_sample = []
        spec = None
        for b in range(batch_size):
            sample_args = [a if d is None else a.select(d, b) for a, d in zip(flat_args, flat_in_dims)]
            if randomness == "same":
                backend_random.set_rng_state(start_state)
            _active[0] += 1
            try:
                out = func(*tree_unflatten(sample_args, args_spec), **kwargs)
            finally:
                _active[0] -= 1
            if randomness == "error" and (b == 0 or b == batch_size - 1) and _state_changed(start_state):
                # checked after the first sample (the usual case fails at once) and after the
                # last (a draw in any sample changed the state): two reads, not one per sample
                _raise_random_in_error_mode()
            flat_out, out_spec = tree_flatten(out)
            if spec is None:
                spec, first = out_spec, out
            elif out_spec != spec:
                raise ValueError(f"vmap({func_name(func)}): the output of sample {b} has structure {out_spec}, sample "
                                 f"0's has {spec}; the function must return the same structure for every sample")
            per_sample.append(flat_out)
        flat_dims = _flat_out_dims(func, out_dims, first, spec)
        columns = list(zip(*per_sample)) if per_sample[0] else []
        return tree_unflatten([_combine(func, list(col), d) for col, d in zip(columns, flat_dims)], spec)

    return wrapped
