"""Parameter averaging over a process group (torch's ``model_averaging.utils``).

Communication plan of :func:`average_parameters`: the parameters' values are concatenated
into one flat buffer (``E`` elements, one dtype: the first parameter's), divided by the group
size and all-reduced (sum) in one collective, as torch does (the same rounding), then copied
back into each parameter in place (its version counter bumped). Costs ``E`` extra elements of
memory.
"""

from __future__ import annotations

from ....autograd import Tensor
from ....backend.xp import get_array_module
from ....comm import get_world
from ... import GroupMember

__all__ = ["average_parameters", "get_params_to_average", "average_parameters_or_parameter_groups"]


def average_parameters(params, process_group) -> None:
    """Average ``params`` (Tensors) over ``process_group`` (None: the world), in place."""
    if process_group is GroupMember.NON_GROUP_MEMBER:
        return
    group = process_group if process_group is not None else get_world()
    params = list(params)
    if not params:
        return
    arrays = [p.array for p in params]
    xp = get_array_module(arrays[0])
    flat = xp.concatenate([a.reshape(-1).astype(arrays[0].dtype, copy=False) for a in arrays])
    flat /= group.size  # (E,)
    group.all_reduce(flat, "sum")
    start = 0
    for p, a in zip(params, arrays):
        a[...] = flat[start:start + a.size].reshape(a.shape).astype(a.dtype, copy=False)
        start += a.size
        p._bump_version()


def get_params_to_average(params) -> list:
    """The parameters (or the parameters of the optimizer groups) that have a gradient."""
    out = []
    for param in params:
        if isinstance(param, Tensor):
            if param.grad is not None:
                out.append(param)
        elif isinstance(param, dict):
            out.extend(p for p in param["params"] if p.grad is not None)
        else:
            raise NotImplementedError(f"Parameter input of type {type(param)} is not supported")
    return out


def average_parameters_or_parameter_groups(params, process_group) -> None:
    """Average the parameters of a model or of an optimizer's parameter groups."""
    average_parameters(get_params_to_average(params), process_group)
