"""``torch.distributed.utils``: the private helpers code copied from torch's FSDP/DDP imports
(``from torch.distributed.utils import _p_assert, _apply_to_tensors, _to_kwargs``), with torch's
behaviour:

* ``_p_assert(cond, s, raise_assertion_error=True)``: print ``s`` and the stack, then raise
  (an ``assert`` whose message a backward hook would swallow);
* ``_apply_to_tensors(fn, container)``: ``fn`` on every tensor in nested dataclasses,
  (ordered) dicts, namedtuples, lists, tuples and sets (a ``PackedSequence``'s data visited);
* ``_pack_kwargs`` / ``_unpack_kwargs``, ``_cast_forward_inputs(dtype, *args, **kwargs)``
  (floating tensors cast, others kept), ``_replace_by_prefix(state_dict, old, new)``,
  ``_get_root_modules(modules)``;
* ``_recursive_to(inputs, target_device, use_side_stream)`` / ``_to_kwargs(inputs, kwargs,
  target_device, use_side_stream)``: tensors moved to ``target_device`` (one entry, as torch's
  for one device; the side stream is not used: copies are synchronous here).
* ``_sync_module_states(module, process_group, broadcast_bucket_size, src,
  params_and_buffers_to_ignore, broadcast_buffers=True)`` / ``_sync_params_and_buffers``:
  parameters and buffers broadcast from ``src`` (one ``broadcast`` per tensor; the bucket size
  only groups torch's copies).

Not built: the storage helpers (``_free_storage``, ``_alloc_storage``, ``_data_ptr_allocated``:
FSDP's flat-parameter memory tricks) and ``_verify_param_shape_across_processes``.
"""

from __future__ import annotations

import dataclasses
import traceback
from collections import OrderedDict

from ..autograd.tensor import Tensor
from ..nn.utils.rnn import PackedSequence

__all__: list[str] = []


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _p_assert(cond, s: str, raise_assertion_error: bool = True) -> None:
    """``assert cond, s`` that also prints ``s`` and the stack (backward swallows messages)."""
    if not cond:
        print(s)
        traceback.print_stack()
        if raise_assertion_error:
            raise AssertionError(s)


def _apply_to_tensors(fn, container):
    """``fn`` applied to every tensor in ``container`` (nested containers rebuilt)."""

    def apply(x):
        if isinstance(x, Tensor):
            return fn(x)
        if hasattr(x, "__dataclass_fields__"):
            dc = dataclasses.replace(x)
            return dataclasses.replace(dc, **{f.name: apply(getattr(dc, f.name)) for f in dataclasses.fields(dc)})
        if isinstance(x, OrderedDict):
            od = x.__class__()
            for key, value in x.items():
                od[key] = apply(value)
            return od
        if isinstance(x, PackedSequence):
            apply(x.data)
            return x
        if isinstance(x, dict):
            return {key: apply(value) for key, value in x.items()}
        if _is_namedtuple(x):
            return type(x)(*(apply(el) for el in x))
        if isinstance(x, list | tuple | set):
            return type(x)(apply(el) for el in x)
        return x

    return apply(container)


def _pack_kwargs(*args, **kwargs):
    """``(flat_args, kwarg_keys)``: positional values, then keyword values in key order."""
    return tuple(args) + tuple(kwargs.values()), tuple(kwargs)


def _unpack_kwargs(flat_args, kwarg_keys):
    """The inverse of ``_pack_kwargs``: ``(args, kwargs)``."""
    if len(kwarg_keys) > len(flat_args):
        raise AssertionError(f"too many keys {len(kwarg_keys)} vs. {len(flat_args)}")
    if len(kwarg_keys) == 0:
        return flat_args, {}
    return flat_args[: -len(kwarg_keys)], dict(zip(kwarg_keys, flat_args[-len(kwarg_keys):], strict=True))


def _cast_forward_inputs(dtype, *args, **kwargs):
    """Floating-point tensors of ``args`` / ``kwargs`` cast to ``dtype`` (None: unchanged)."""
    if dtype is None:
        return args, kwargs

    def cast_fn(x):
        if not x.is_floating_point() or x.dtype == dtype:
            return x
        return x.to(dtype)

    return _apply_to_tensors(cast_fn, args), _apply_to_tensors(cast_fn, kwargs)


def _replace_by_prefix(state_dict: dict, old_prefix: str, new_prefix: str) -> None:
    """Rename, in place, the keys starting with ``old_prefix`` to start with ``new_prefix``."""
    if old_prefix == new_prefix:
        raise ValueError("old_prefix and new_prefix must be distinct")
    for key in list(state_dict.keys()):
        if key.startswith(old_prefix):
            state_dict[new_prefix + key[len(old_prefix):]] = state_dict.pop(key)


def _get_root_modules(modules: list) -> list:
    """The modules of ``modules`` that no other module of ``modules`` contains."""
    contained = {id(m): {id(x) for x in m.modules()} for m in modules}
    return [c for c in modules
            if not any(c is not m and id(c) in contained[id(m)] for m in modules)]


def _recursive_to(inputs, target_device, use_side_stream_for_tensor_copies):
    """``inputs`` with every tensor on ``target_device``, as torch's one-device result: a list
    with one entry (tuples become lists of tuples, as torch's scatter-shaped result)."""

    def to_map(obj):
        if isinstance(obj, Tensor | PackedSequence):
            device = obj.data.device if isinstance(obj, PackedSequence) else obj.device
            return (obj,) if device == target_device else (obj.to(target_device),)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(to_map, obj), strict=True)]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(to_map, obj), strict=True))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(to_map, obj), strict=True)]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(to_map, obj.items()), strict=True)]
        return [obj]

    return to_map(inputs)


def _to_kwargs(inputs, kwargs, target_device, use_side_stream_for_tensor_copies):
    """``(inputs, kwargs)`` moved to ``target_device``, each a tuple of one entry."""
    moved_inputs = _recursive_to(inputs, target_device, use_side_stream_for_tensor_copies) if inputs else []
    moved_kwargs = _recursive_to(kwargs, target_device, use_side_stream_for_tensor_copies) if kwargs else []
    if len(moved_inputs) < len(moved_kwargs):
        moved_inputs.extend([() for _ in range(len(moved_kwargs) - len(inputs))])
    elif len(moved_kwargs) < len(moved_inputs):
        moved_kwargs.extend([{} for _ in range(len(moved_inputs) - len(moved_kwargs))])
    return tuple(moved_inputs), tuple(moved_kwargs)


def _sync_params_and_buffers(process_group, module_states, broadcast_bucket_size: int, src: int) -> None:
    """Broadcast each tensor of ``module_states`` from rank ``src`` of ``process_group``."""
    from . import broadcast, get_global_rank

    root = src if process_group is None else get_global_rank(process_group, src)  # src: a group rank
    for t in module_states:
        broadcast(t, root, group=process_group)


def _sync_module_states(module, process_group, broadcast_bucket_size: int, src: int,
                        params_and_buffers_to_ignore, broadcast_buffers: bool = True) -> None:
    """Make every rank's parameters (and buffers) those of rank ``src``."""
    states = [p.detach() for n, p in module.named_parameters() if n not in params_and_buffers_to_ignore]
    if broadcast_buffers:
        states += [b.detach() for n, b in module.named_buffers() if n not in params_and_buffers_to_ignore]
    if states:
        _sync_params_and_buffers(process_group, states, broadcast_bucket_size, src)
