"""``torch.nn.parallel``'s DataParallel primitives: ``scatter``, ``gather``, ``replicate``,
``parallel_apply`` and the functional ``data_parallel``.

PyTorch's algorithms, with one device's semantics where PyTorch would copy to several GPUs
(shardflow's ``DataParallel`` runs on one device, ``data_parallel.py``):

* ``scatter(inputs, target_gpus, dim=0)``: each tensor is split with ``chunk(len(target_gpus),
  dim)``; tuples, lists, dicts and namedtuples are scattered element-wise; other objects are
  repeated; the result is one entry per target. A chunk goes to ``cuda:<id>`` when CUDA is
  available, else stays where it is (a CPU-only machine has one device).
* ``gather(outputs, target_device, dim=0)``: the inverse: tensors concatenated along ``dim``
  (differentiable), on ``target_device`` (``-1`` / ``"cpu"``: the CPU); 0-d tensors are stacked
  into a vector with PyTorch's warning.
* ``replicate(network, devices, detach=False)``: one shallow copy of the module tree per
  device; as in PyTorch a replica's parameters are plain attributes (``replica.parameters()``
  is empty) holding the original parameters (moved with a differentiable ``to`` when the device
  differs), so gradients of the replicas' outputs reach the original parameters; with
  ``detach=True`` they are detached.
* ``parallel_apply(modules, inputs, kwargs_tup=None, devices=None)``: ``modules[i](*inputs[i],
  **kwargs_tup[i])`` for each ``i`` (PyTorch runs them on threads; one after the other here, the
  same results), exceptions re-raised.
"""

from __future__ import annotations

import warnings

from ...autograd import Tensor
from ...backend import cuda_is_available
from ...backend import device as _device
from ...ops.shape import cat, chunk
from ..module import Module

__all__ = ["scatter", "gather", "replicate", "parallel_apply", "data_parallel"]


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _target(device):
    """The device a chunk for ``device`` goes to: ``cuda:<id>`` with CUDA, else None (stay)."""
    if device is None or device == -1 or str(device) == "cpu":
        return _device("cpu")
    if not cuda_is_available():
        return None
    return _device("cuda", device) if isinstance(device, int) else _device(device)


def _place(t: Tensor, device) -> Tensor:
    target = _target(device)
    return t if target is None or t.device == target else t.to(target)


def scatter(inputs, target_gpus, dim: int = 0):
    """Split tensors into ``len(target_gpus)`` chunks along ``dim`` (see the module docstring)."""

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return [_place(c, d) for c, d in zip(chunk(obj, len(target_gpus), dim), target_gpus)]
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_gpus]

    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim: int = 0):
    """``scatter`` of positional and keyword arguments, padded to the same length."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(tensors, target_device, dim: int) -> Tensor:
    if all(t.ndim == 0 for t in tensors) and dim == 0:
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; "
                      "will instead unsqueeze and return a vector.", stacklevel=3)
        tensors = [t.unsqueeze(0) for t in tensors]
    target = _target(target_device)
    if target is not None:
        tensors = [t if t.device == target else t.to(target) for t in tensors]
    return cat(list(tensors), dim)


def gather(outputs, target_device, dim: int = 0):
    """Concatenate per-device outputs along ``dim`` (see the module docstring)."""

    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, Tensor):
            return _gather_tensors(outputs, target_device, dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs, strict=True)))
        return type(out)(map(gather_map, zip(*outputs, strict=True)))

    return gather_map(outputs)


def _replica(module: Module, device, detach: bool, memo: dict) -> Module:
    if id(module) in memo:
        return memo[id(module)]
    replica = module.__new__(type(module))
    replica.__dict__ = module.__dict__.copy()
    d = replica.__dict__
    memo[id(module)] = replica
    d["_parameters"] = {}
    d["_buffers"] = {k: (None if b is None else _place(b, device)) for k, b in module._buffers.items()}
    d["_modules"] = {k: (None if m is None else _replica(m, device, detach, memo))
                     for k, m in module._modules.items()}
    for name, p in module._parameters.items():
        if p is None:
            d[name] = None
            continue
        moved = _place(p, device)
        d[name] = moved.detach() if detach else moved
    return replica


def replicate(network: Module, devices, detach: bool = False) -> list:
    """One replica of ``network`` per device (see the module docstring)."""
    if not isinstance(network, Module):
        raise TypeError(f"replicate: expected a Module, got {type(network).__name__}")
    return [_replica(network, d, detach, {}) for d in devices]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None) -> list:
    """``[modules[i](*inputs[i], **kwargs_tup[i]) for i ...]`` (see the module docstring)."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of "
                             f"inputs {len(inputs)}")
    if kwargs_tup is not None:
        if len(modules) != len(kwargs_tup):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                                 f"of kwargs {len(kwargs_tup)}")
    else:
        kwargs_tup = ({},) * len(modules)
    outputs = []
    for module, inp, kwargs in zip(modules, inputs, kwargs_tup):
        if not isinstance(inp, (list, tuple)):
            inp = (inp,)
        outputs.append(module(*inp, **kwargs))
    return outputs


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """The functional ``DataParallel``: ``module(*inputs, **module_kwargs)`` on one device, as
    ``DataParallel`` runs (PyTorch's raises "device type could not be determined" on a machine
    without GPUs)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
