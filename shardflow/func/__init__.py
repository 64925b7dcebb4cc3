"""``torch.func`` path: ``functional_call`` (a module called with given parameters and buffers,
``nn.utils.stateless``), ``grad`` and ``grad_and_value`` (nestable: ``grad(grad(f))``, through
the create_graph engine; grad_transform.py). ``vmap``, ``jacrev`` and the other transforms
are not built."""

from __future__ import annotations

from collections.abc import Sequence

from ..nn.utils.stateless import _functional_call
from .grad_transform import grad, grad_and_value

__all__ = ["functional_call", "grad", "grad_and_value"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (one dict,
    or a sequence of dicts with disjoint keys) in place of the module's parameters and buffers,
    restored after the call (see ``shardflow.nn.utils.stateless``)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, values, args, kwargs, tie_weights=tie_weights, strict=strict)
