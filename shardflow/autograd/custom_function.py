"""PyTorch's custom autograd Functions on shardflow's ``Function`` class.

A subclass of ``torch.autograd.Function`` written in PyTorch's style::

    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    y = Sq.apply(x)

is recognised once, when the class is created (``Function.__init_subclass__`` calls
:func:`adopt_custom_function`): its ``forward`` is a staticmethod, or a plain function whose
first parameter is ``ctx`` (torch accepts that too), or the class defines ``setup_context``.
Internal ops (``forward(self, *arrays)`` on raw arrays) are left exactly as they are, so the
per-op hot path (``Function.apply``) pays nothing.

A recognised class gets ``_backward_cls`` (a :class:`BackwardCFunction` subclass named
``<Name>Backward``, torch's node name) and the ctx-based ``apply`` below (:func:`_apply`):

1. ``needs_input_grad`` (one bool per positional argument: a Tensor that requires grad) and
   the graph edges (the inputs' producers) are taken before forward runs, as ``Function.apply``
   does; the node itself is the ``ctx`` (``ctx is y.grad_fn``, as in torch).
2. The user's ``forward(ctx, *args)`` (or ``forward(*args)`` then ``setup_context(ctx, inputs,
   output)``, with the arguments bound to ``forward``'s signature and defaults) runs under
   ``no_grad``.
3. The outputs are linked to the node (:func:`_link_outputs`): output ``k`` (counting Tensor
   outputs only) gets ``grad_fn=node, output_nr=k`` when an input requires grad, grad mode is
   on, and the output is differentiable (floating/complex, not ``mark_non_differentiable``).
   An input returned as is becomes a new Tensor sharing its memory and version counter (torch
   returns a view); an input marked dirty (``mark_dirty``, changed in place by forward) is
   returned itself, its version bumped and its history rebased onto the node (a leaf that
   requires grad refuses, as in torch).
4. What ``save_for_backward`` got is classified once the outputs are known: an input (kept
   with its array and version), an output (array and version only: holding the Tensor would
   make a node -> tensor -> node cycle), or any other Tensor. ``ctx.saved_tensors`` checks the
   versions (torch's "modified by an inplace operation" error) and rebuilds the Tensors.

In backward the engine calls the node's ``backward(*grad_arrays)``: the gradients are wrapped
as Tensors (one per forward output; None for a non-Tensor output, or for one that received no
gradient when ``ctx.set_materialize_grads(False)``), the user's ``backward`` (or ``vjp``) runs
under ``no_grad``, and its result is checked as torch checks it (count, None for non-Tensor
inputs) and returned as arrays. ``backward_graph`` (the ``create_graph=True`` pass of
``autograd/higher_order.py``) does the same under grad mode with Tensors, ``saved_tensors``
rebuilt through ``saved_input``/``saved_output`` so the result is differentiable;
:func:`once_differentiable` (torch's wrapper) makes a second differentiation raise torch's
error instead.

``jvp``: called for a Function without ``backward``/``vjp`` inside a forward-AD level
(``autograd/forward_ad.py``); a Function with ``backward`` gets its tangents from it there.
Accepted and ignored: ``save_for_forward`` (kept on the ctx for ``jvp``),
``vmap``/``generate_vmap_rule`` (``torch.func.vmap`` is a loop of plain calls here, so a
custom Function needs no vmap rule).
"""

from __future__ import annotations

import functools
import inspect
import warnings

from ..backend import from_numpy_dtype
from . import grad_mode
from .function import Function, edge_of
from .saved_hooks import _Packed, pack_custom_saved, unpack_custom_entry
from .saved_hooks import _stack as _saved_hooks
from .tensor import Tensor, _is_differentiable, _wrap

# ----------------------------------------------------------------------------- adoption
# (defined before the classes below: Function.__init_subclass__ imports it while this
# module is still loading, when those classes are created)


def is_custom_function_class(cls) -> bool:
    """PyTorch's style: a static ``forward``, a ``forward(ctx, ...)``, ``setup_context``, or a
    non-static ``forward(self, ...)``/``backward`` that uses the ctx API (``self.save_for_backward``,
    ``saved_tensors``...: torch runs that through ``apply`` too). Internal ops have none of these."""
    forward = inspect.getattr_static(cls, "forward", None)
    if isinstance(forward, staticmethod) or hasattr(cls, "setup_context"):
        return True
    code = getattr(forward, "__code__", None)
    if code is None:
        return False
    if code.co_argcount > 0 and code.co_varnames[0] == "ctx":
        return True
    backward = getattr(inspect.getattr_static(cls, "backward", None), "__code__", None)
    return any(not _CTX_API.isdisjoint(c.co_names) for c in (code, backward) if c is not None)


# names only the ctx API has (function.py's internal Function uses none of them)
_CTX_API = frozenset({"save_for_backward", "saved_tensors", "mark_dirty",
                      "mark_non_differentiable", "set_materialize_grads"})


def adopt_custom_function(cls) -> None:
    """Give a PyTorch-style Function subclass its node class and ctx-based ``apply``."""
    if not is_custom_function_class(cls):
        return
    cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                             {"__slots__": (), "_forward_cls": cls, "__module__": __name__})
    if "apply" not in cls.__dict__:
        cls.apply = classmethod(_apply)
    if "__call__" not in cls.__dict__:
        cls.__call__ = _legacy_call
    if cls.__init__ is object.__init__:  # no __init__ of its own or of a base (InplaceFunction's warns)
        cls.__init__ = _instantiation_warning


def _instantiation_warning(self, *args, **kwargs):
    # torch's Function.__init__ (its nodes are another class here: cls._backward_cls)
    warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
                  "static, so you should invoke them on the class itself. Instantiating an autograd "
                  "function will raise an error in a future version of PyTorch.", DeprecationWarning,
                  stacklevel=2)


def _legacy_call(self, *args, **kwargs):
    raise RuntimeError(
        "Legacy autograd function with non-static forward method is deprecated. Please use "
        "new-style autograd function with static forward method. (Example: "
        "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function) "
        f"(fix: call {type(self).__name__}.apply(...) on the class, with forward and backward "
        "as @staticmethod taking ctx first)"
    )


# ----------------------------------------------------------------------------- apply


def _apply(cls, *args, **kwargs):
    """``cls.apply(*args, **kwargs)``: run the user's forward and link its outputs (module
    docstring, steps 1-4)."""
    setup_context = getattr(cls, "setup_context", None)
    if setup_context is not None:
        args = _bind_default_args(cls.forward, args, kwargs)
    elif kwargs:
        args = _keywords_as_positional(cls.forward, args, kwargs)
    node = cls._backward_cls()
    needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    node.needs_input_grad = needs
    executable = any(needs) and grad_mode.is_grad_enabled()
    # the inputs' producers before forward runs (a dirty input's history is rebased after it)
    edges = tuple(edge_of(a) if need else None for a, need in zip(args, needs))
    with grad_mode.no_grad():
        if setup_context is None:
            out = cls.forward(node, *args)
        else:
            out = cls.forward(*args)
            setup_context(node, args, out)
    result = _link_outputs(node, args, edges, out, executable)
    if getattr(cls, "jvp", None) is not None and cls.backward is Function.backward and getattr(cls, "vjp", None) is None:
        from . import forward_ad  # a forward-mode-only Function: its jvp gives the tangents

        if forward_ad._level[0] is not None:
            return forward_ad._through_user_jvp(cls, node, args, result)
    return result


def _bind_default_args(forward, args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` as the positional arguments of ``forward``, defaults filled in
    (torch does this when ``setup_context`` is defined: ``inputs`` holds them all)."""
    bound = _signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


def _keywords_as_positional(forward, args: tuple, kwargs: dict) -> tuple:
    """torch's rule for ``apply(x, w=w)`` without ``setup_context``: each keyword argument
    takes its parameter's position in ``forward(ctx, ...)`` and counts as an input (it gets a
    gradient slot); positions up to the last one must all be given (defaults are not used)."""
    names = [p.name for p in _signature(forward).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]  # after ctx
    slots = list(args)
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"forward() got an unexpected keyword argument '{key}'")
        pos = names.index(key)
        if pos < len(args):
            raise TypeError(f"forward() got multiple values for argument '{key}'")
        slots += [_MISSING] * (pos + 1 - len(slots))
        slots[pos] = value
    for pos, value in enumerate(slots):
        if value is _MISSING:
            raise TypeError(f"forward() missing required argument: '{names[pos]}' (position {pos})")
    return tuple(slots)


_MISSING = object()


@functools.lru_cache(maxsize=256)
def _signature(forward) -> inspect.Signature:
    """``forward``'s signature, read once per function (binding happens on every apply)."""
    return inspect.signature(forward)


def _link_outputs(node, args: tuple, edges: tuple, out, executable: bool):
    """The Tensors ``apply`` returns, linked to ``node`` when ``executable``."""
    d = node.__dict__
    dirty = d.pop("_sf_dirty", ())
    non_diff = d.pop("_sf_non_diff", ())
    if executable:
        for t in dirty:
            if t.requires_grad and t.grad_fn is None:
                raise RuntimeError(
                    "a leaf Variable that requires grad has been used in an in-place operation. "
                    f"({node._forward_cls.__name__}.forward marked it dirty; fix: pass a clone, "
                    "or do not change the input in place)"
                )
    outs = out if isinstance(out, tuple) else (out,)
    results = []
    meta = []
    positions = []  # per forward output: its output number, None for a non-Tensor
    tensor_outputs = []  # (forward's Tensor, the Tensor returned), by output number
    for o in outs:
        if not isinstance(o, Tensor):
            results.append(o)
            positions.append(None)
            continue
        k = len(meta)
        positions.append(k)
        meta.append((o.array.shape, o.array.dtype))
        if _contains(dirty, o):
            o._version_counter[0] += 1
            r = o
        elif _contains(args, o) or o.requires_grad or any(o is t for t, _ in tensor_outputs):
            r = _wrap(o.array, version=o._version_counter)  # torch returns a view of it
            r._spec = o._spec
        else:
            r = o
        if executable and _is_differentiable(o.array) and not _contains(non_diff, o):
            r.requires_grad = True
            r.grad_fn = node
            r._output_nr = k
        tensor_outputs.append((o, r))
        results.append(r)
    if not executable:
        return tuple(results) if isinstance(out, tuple) else results[0]
    node._edges = edges
    node._freed = False
    node._pre_hooks = None
    node._saved_versions = None  # checked when ctx.saved_tensors is read (as torch does)
    node._out_meta = meta
    node._out_shape = None
    d["_sf_positions"] = tuple(positions)
    d["_sf_in_dtypes"] = tuple(a.array.dtype if isinstance(a, Tensor) else None for a in args)
    to_save = d.pop("_sf_to_save", None)
    if to_save:
        d["_sf_saved"] = saved = [_saved_entry(t, args, tensor_outputs) for t in to_save]
        if _saved_hooks:  # saved-tensor hooks are active: pack what was saved (saved_hooks.py)
            pack_custom_saved(node, saved)
    if not d.get("_sf_materialize", True):
        _record_received_gradients(node, len(meta))
    return tuple(results) if isinstance(out, tuple) else results[0]


def _contains(items, t) -> bool:
    return any(t is x for x in items)


def _saved_entry(t, args: tuple, tensor_outputs: list):
    """What ``saved_tensors`` needs to rebuild ``t``: ``(kind, index, tensor, array, version
    counter, version)``, kind "out" (output ``index``; the Tensor is not held), "in" (input
    ``index``) or "other"."""
    if t is None:
        return None
    for k, (o, r) in enumerate(tensor_outputs):
        if t is r or (t is o and r is o):
            return ("out", k, None, t.array, t._version_counter, t._version_counter[0])
    for i, a in enumerate(args):
        if t is a:
            return ("in", i, t, t.array, t._version_counter, t._version_counter[0])
    return ("other", -1, t, t.array, t._version_counter, t._version_counter[0])


def _record_received_gradients(node, n_outputs: int) -> None:
    """With ``set_materialize_grads(False)`` backward sees None for an output that got no
    gradient, but the engine hands zeros to a node of several outputs: a hook per output
    (run by both engines before backward, only for gradients that arrived) notes which did."""
    received: set = set()
    node.__dict__["_sf_received"] = received
    node._pre_hooks = {k: [functools.partial(_note_received, received, k)] for k in range(n_outputs)}


def _note_received(received: set, k: int, grad) -> None:
    received.add(k)


# ----------------------------------------------------------------------------- ctx


class FunctionCtx:
    """torch's ``FunctionCtx``: what ``forward``/``setup_context`` call on ``ctx`` to pass
    state to ``backward``. Any other attribute may be set on it too."""

    def save_for_backward(self, *tensors) -> None:
        """Keep Tensors (or None) for backward; read them back with ``ctx.saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__} (fix: keep non-tensor values as ctx attributes, "
                    "e.g. ctx.k = k)"
                )
        self.__dict__["_sf_to_save"] = tensors

    def save_for_forward(self, *tensors) -> None:
        """Kept for forward-mode AD (``jvp``), which shardflow does not run."""
        self.__dict__["saved_for_forward"] = tensors

    def mark_dirty(self, *args) -> None:
        """Inputs that forward changed in place (and returns)."""
        self.__dict__["_sf_dirty"] = args

    def mark_shared_storage(self, *pairs) -> None:
        warnings.warn(
            "mark_shared_storage is deprecated. Tensors with shared storages are automatically "
            "tracked. Note that calls to `set_()` are not tracked",
            DeprecationWarning, stacklevel=2,
        )

    def mark_non_differentiable(self, *args) -> None:
        """Outputs that get no gradient (``requires_grad=False``; backward sees zeros)."""
        self.__dict__["_sf_non_diff"] = args

    def set_materialize_grads(self, value: bool) -> None:
        """False: backward receives None (not zeros) for outputs that got no gradient."""
        self.__dict__["_sf_materialize"] = bool(value)


class BackwardCFunction(Function, FunctionCtx):
    """The graph node (and ``ctx``) of a custom Function call; ``<Name>Backward`` subclasses it
    with ``_forward_cls``, the user's class (see the module docstring)."""

    __slots__ = ()
    _forward_cls = None

    @property
    def saved_tensors(self) -> tuple:
        """The Tensors given to ``save_for_backward``, checked for in-place changes since."""
        d = self.__dict__
        saved = d.get("_sf_saved")
        if saved is None:
            if getattr(self, "_freed", False):
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access "
                    "saved tensors after they have already been freed). Saved intermediate "
                    "values of the graph are freed when you call .backward() or autograd.grad(). "
                    "Specify retain_graph=True if you need to backward through the graph a second "
                    "time or if you need to access saved tensors after calling backward."
                )
            return ()  # read in forward: torch packs the saved tensors after forward returns
        graph = d.get("_sf_graph", False)
        return tuple(None if e is None else self._rebuild_saved(e, graph) for e in saved)

    @property
    def saved_variables(self) -> tuple:
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'",
                      DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def _rebuild_saved(self, entry, graph: bool) -> Tensor:
        kind, index, tensor, array, counter, version = entry
        unpacked = None
        if isinstance(array, _Packed):  # saved-tensor hooks: unpack on every read (torch's rule)
            unpacked = unpack_custom_entry(self, array)
            array = unpacked.array
        if counter[0] != version:
            _raise_modified(self, kind, index, tensor, array, counter[0], version)
        if unpacked is not None and kind != "out" and not graph:
            return unpacked
        if kind == "out":
            if graph:
                return self.saved_output(index, array)
            return _wrap(array, True, self, index, version=counter)
        if kind == "in":
            if graph:
                return self.saved_input(index, array)
            return tensor if tensor.array is array else _wrap(array, version=counter)
        return tensor

    # ------------------------------------------------------------------ engine entries
    def backward(self, *grad_arrays):
        """First-order backward (engine.py): the user's backward on Tensors, under no_grad."""
        grads = self._user_grads([None if g is None else _wrap(g) for g in grad_arrays])
        with grad_mode.no_grad():
            result = _user_backward(self._forward_cls)(self, *grads)
        return tuple(None if g is None else g.array for g in self._input_gradients(result))

    def backward_graph(self, *grad_outputs):
        """create_graph=True backward (higher_order.py): the user's backward under grad mode
        (the engine's), ``saved_tensors`` rebuilt with their history, so the result carries a
        graph (unless the backward is ``once_differentiable``)."""
        grads = self._user_grads(list(grad_outputs))
        d = self.__dict__
        d["_sf_graph"] = True
        try:
            result = _user_backward(self._forward_cls)(self, *grads)
        finally:
            d["_sf_graph"] = False
        return tuple(self._input_gradients(result))

    def _user_grads(self, grads: list) -> list:
        """One gradient per forward output: None for a non-Tensor output, and, without
        materialized gradients, for an output that received none."""
        d = self.__dict__
        received = d.get("_sf_received")
        if received is not None:
            grads = [g if k in received else None for k, g in enumerate(grads)]
            received.clear()
        return [None if k is None else grads[k] for k in d["_sf_positions"]]

    def _input_gradients(self, result) -> list:
        """The user's backward result as one Tensor (or None) per positional input, checked
        as torch checks it."""
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self._edges)
        if len(result) != n and (len(result) < n or any(g is not None for g in result[n:])):
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected "
                f"{n}, got {len(result)}) (fix: return one gradient per positional argument of "
                f"{self._forward_cls.__name__}.apply, None for those that need none)"
            )
        dtypes = self.__dict__["_sf_in_dtypes"]
        grads = []
        for i in range(n):
            g = result[i]
            if g is None:
                grads.append(None)
                continue
            if dtypes[i] is None:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a Variable "
                    f"(fix: return None for argument {i} of {self._forward_cls.__name__}.apply)"
                )
            if not isinstance(g, Tensor):
                raise TypeError(
                    f"function {self.name()} returned a {type(g).__name__} as the gradient of "
                    "input {i}; expected a Tensor or None"
                )
            if self._edges[i] is None:
                grads.append(None)  # the input needs no gradient: torch drops it
                continue
            if g.array.dtype != dtypes[i]:
                g = g.to(from_numpy_dtype(dtypes[i]))
            grads.append(g)
        return grads

    def name(self) -> str:
        return type(self).__name__


def _user_backward(fwd_cls):
    """The user's ``backward`` or ``vjp`` (torch's rule: exactly one of them)."""
    backward = fwd_cls.backward
    vjp = getattr(fwd_cls, "vjp", None)
    has_backward = backward is not Function.backward
    if has_backward and vjp is not None:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
            f"should only implement one of them. (in {fwd_cls.__name__})"
        )
    if vjp is not None:
        return vjp
    if not has_backward:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            f"autograd.Function to use it with backward mode AD. ({fwd_cls.__name__} defines "
            "neither: add @staticmethod def backward(ctx, *grad_outputs))"
        )
    return backward


def _raise_modified(node, kind, index, tensor, array, now, version) -> None:
    from .legacy_types import tensor_type_name

    t = _wrap(array)
    if kind == "out":
        origin = f", which is output {index} of {node._forward_cls.__name__},"
    elif tensor is not None and tensor.grad_fn is not None:
        origin = f", which is output {tensor._output_nr} of {tensor.grad_fn.name()},"
    else:
        origin = ""
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{tensor_type_name(t)} {list(array.shape)}]{origin} is at version {now}; "
        f"expected version {version} instead. Hint: the tensor was saved by "
        f"{node._forward_cls.__name__} (ctx.save_for_backward) and changed in place before "
        "backward (fix: use an out-of-place op, or .clone() it before changing it)"
    )


# ----------------------------------------------------------------------------- torch's helpers


class InplaceFunction(Function):
    """torch's ``InplaceFunction`` (kept for backward compatibility): a Function with an
    ``inplace`` flag."""

    def __init__(self, inplace: bool = False):
        _instantiation_warning(self)
        self.inplace = inplace


class _OnceDifferentiableError(Function):
    """Stands for the gradient of a ``once_differentiable`` backward: passes its inputs
    through; differentiating through it raises torch's error."""

    save_inputs = ()

    def forward(self, *arrays):
        return arrays if len(arrays) != 1 else arrays[0]

    def backward(self, *grad_outputs):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
            " (fix: remove @once_differentiable and write backward with differentiable ops)"
        )


def once_differentiable(fn):
    """torch's decorator for a ``backward`` that cannot itself be differentiated: it runs
    under ``no_grad``; when a gradient graph is being built (``create_graph=True``) its
    results are linked to a node whose backward raises, so a second differentiation fails
    loudly instead of giving zero."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not grad_mode.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        linked = [k for k, v in enumerate(outs) if isinstance(v, Tensor) and _is_differentiable(v.array)]
        if not linked:
            return outputs
        fakes = []
        for k in linked:
            v = outs[k].detach()
            v.requires_grad = True
            fakes.append(v)
        errs = _OnceDifferentiableError.apply(*fakes)
        errs = errs if isinstance(errs, tuple) else (errs,)
        result = list(outs)
        for k, e in zip(linked, errs):
            result[k] = e
        return tuple(result) if isinstance(outputs, tuple) else result[0]

    return wrapper
