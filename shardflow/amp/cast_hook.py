"""The autocast op hook: casts an op's floating inputs as the policy says (``policy.py``).

Installed in the op dispatch (``autograd.dispatch.set_autocast_handler``) while at least one
enabled autocast region is open, removed when the last one closes; with no region open the
per-op cost is the dispatch's one check, as before.

Per op call inside a region:

1. An op not named by any policy goes straight on (one frozenset lookup).
2. The device type is that of the first tensor argument; if that device's region is not
   enabled, the call goes on unchanged.
3. Eligible tensors (floating, on that device, not float64 — PyTorch's rule) are cast with
   the differentiable ``Tensor.to`` (``ToDtype``: its backward casts the gradient back, so a
   float32 parameter receives a float32 gradient: master weights stay float32). ``LOWER``
   casts to the region's dtype, ``FP32`` to float32, ``PROMOTE`` to the widest floating
   dtype among the inputs. Lists and tuples (``cat``, ``stack``) are cast element-wise.
4. The op runs with the hook paused (``_busy``), so ops it calls internally are not cast
   again (PyTorch excludes the autocast key below an autocast kernel the same way).
5. A ``LOWER`` op whose result came back in float32 although its inputs were low precision
   (NumPy computes ``bfloat16 @ bfloat16`` in float32; ``tests/ops/dtype_gaps.py``) has
   its result cast to the region's dtype: the numbers are those of a float32 accumulation
   of the bfloat16-rounded inputs, rounded to bfloat16, which is what PyTorch's CPU kernels
   compute.

Cast cache (``cache_enabled=True``, PyTorch's default): the low-precision copy of a leaf
tensor that requires grad (a parameter) is kept until the outermost region exits, so a
weight used by several ops is cast once. An entry is reused only while the parameter's
version (in-place updates, e.g. ``optimizer.step()`` inside the region) and the grad mode
are those it was made under, and while its graph node has not been freed by a backward
(a whole training loop inside one region casts again each iteration).
"""

from __future__ import annotations

from ..autograd import Tensor, is_grad_enabled
from ..backend import float32, float64
from .policy import ANY_POLICY, CUDA_BANNED, FP32, LOWER, POLICY

# Per device type: [enabled, dtype, cache_enabled] of the innermost region (set by autocast_mode).
state = {"cpu": [False, None, True], "cuda": [False, None, True]}
_busy = [False]
# id(source) -> (source, version, grad_enabled, dtype, cast copy)
_cache: dict[int, tuple] = {}


def clear_cache() -> None:
    """Drop every cached cast (``torch.clear_autocast_cache``)."""
    _cache.clear()


def _first_tensor(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, list | tuple) and a and isinstance(a[0], Tensor):
            return a[0]
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return a
    return None


def _eligible(t: Tensor, dev: str) -> bool:
    return t.is_floating_point() and t.dtype != float64 and t.device.type == dev


def _cast(t: Tensor, dtype, dev: str, cache: bool):
    if t.dtype == dtype or not _eligible(t, dev):
        return t
    if cache and t.requires_grad and t.grad_fn is None:
        key = id(t)
        grad_on = is_grad_enabled()
        hit = _cache.get(key)
        if (hit is not None and hit[1] == t._version_counter[0] and hit[2] == grad_on and hit[3] == dtype
                and (hit[4].grad_fn is None or not hit[4].grad_fn._freed)):
            return hit[4]
        out = t.to(dtype)
        _cache[key] = (t, t._version_counter[0], grad_on, dtype, out)
        return out
    return t.to(dtype)


def _cast_all(values, dtype, dev, cache):
    out = []
    for v in values:
        if isinstance(v, Tensor):
            v = _cast(v, dtype, dev, cache)
        elif isinstance(v, list | tuple) and v and isinstance(v[0], Tensor):
            v = type(v)(_cast(x, dtype, dev, cache) if isinstance(x, Tensor) else x for x in v)
        out.append(v)
    return out


def _widest(args, kwargs, dev):
    widest = None
    for v in (*args, *kwargs.values()):
        items = v if isinstance(v, list | tuple) else (v,)
        for t in items:
            if isinstance(t, Tensor) and _eligible(t, dev):
                if widest is None or t.element_size() > widest.itemsize:
                    widest = t.dtype
    return widest


def autocast_handler(name, func, args, kwargs, nxt):
    """``dispatch`` hook: see the module docstring."""
    if name not in ANY_POLICY or _busy[0]:
        return nxt(name, func, args, kwargs)
    first = _first_tensor(args, kwargs)
    if first is None:
        return nxt(name, func, args, kwargs)
    dev = first.device.type
    st = state.get(dev)
    if st is None or not st[0]:
        return nxt(name, func, args, kwargs)
    if dev == "cuda" and name in CUDA_BANNED:
        raise RuntimeError(CUDA_BANNED[name])
    kind = POLICY[dev].get(name)
    if kind is None:
        return nxt(name, func, args, kwargs)
    _busy[0] = True
    try:
        if kind is LOWER:
            dtype = st[1]
        elif kind is FP32:
            dtype = float32
        else:  # PROMOTE
            dtype = _widest(args, kwargs, dev)
        if dtype is not None:
            cache = st[2] and kind is LOWER
            args = _cast_all(args, dtype, dev, cache)
            kwargs = dict(zip(kwargs, _cast_all(kwargs.values(), dtype, dev, cache), strict=True))
        out = nxt(name, func, args, kwargs)
        if kind is LOWER and isinstance(out, Tensor) and out.dtype == float32:
            out = out.to(dtype)
        return out
    finally:
        _busy[0] = False
