"""``Optimizer``: the base class, with PyTorch's semantics and ``state_dict`` format.

* ``param_groups``: a list of dicts, each holding ``'params'`` (a list of Tensors) and
  every hyper-parameter, missing ones filled from ``defaults``.
* ``state``: a dict keyed by parameter Tensor; each value is a dict of per-parameter state
  (shardflow Tensors such as ``exp_avg`` and a float32 scalar ``step``).
* ``state_dict()``: ``{'state': {index: {...}}, 'param_groups': [{..., 'params': [index,
  ...]}]}`` with parameters numbered in group order, exactly like PyTorch, so that a dict
  saved by one can be read by the other (after converting the tensors).

Updates run on raw arrays (``p.array``, ``p.grad.array``) with in-place NumPy ufuncs and
``out=``: no Tensor is allocated and no graph is recorded on the hot path. State Tensors
are updated in place (their ``.array`` keeps its identity). Temporaries come from a small
per-optimizer scratch cache keyed by (shape, dtype), not kept in ``state``.

Global parameters (``fully_shard``, tensor parallel, ``to_global``): a per-parameter state
tensor (``exp_avg``, ``momentum_buffer`` ...) is a global tensor with its parameter's
placement, sbp and logical shape, as PyTorch's ``zeros_like(DTensor)`` state is: its
``.array`` is this rank's shard (what the update reads and writes, no communication), its
``.shape`` the parameter's whole shape, so ``state_dict()`` holds the whole logical state
and ``dcp.save`` writes every rank's part. Scalars (``step``) stay local.

``load_state_dict`` checks every state tensor against its parameter before changing
anything (:func:`check_state_fits`): the logical shape must be the parameter's (PyTorch
would fail later, in ``step``, with "The size of tensor a (8) must match ..."), and a
state tensor of a sharded parameter must carry the parameter's layout — one rank's shard
saved as a plain tensor would otherwise be taken for the whole (issue 27).
"""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from itertools import chain

import numpy as np

from ..autograd import Tensor, _wrap, enable_grad, sparse_grad
from ..backend import device_of, is_device_array, to_device
from .hooks import (
    OptimizerHooks,
    hooked_step,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)


class MissingStateKeyError(KeyError, ValueError):
    """A key missing from an optimizer state_dict: torch's KeyError (shardflow's ValueError
    before, so both ``except`` clauses still catch it), with a message that names the fix."""

    def __str__(self) -> str:
        return str(self.args[0])


def _require_key(state_dict: dict, key: str) -> None:
    if key not in state_dict:
        raise MissingStateKeyError(
            f"'{key}': an optimizer state_dict has 'state' and 'param_groups' keys, this one has "
            f"{sorted(state_dict)}; pass what optimizer.state_dict() returned (a checkpoint's "
            "optimizer entry, not the whole checkpoint)")


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer(OptimizerHooks):
    """Base class: subclasses implement ``step`` (see ``sgd.py`` for the pattern); hooks
    (``register_step_pre_hook`` ...) are in ``hooks.py``."""

    #: State keys holding a tensor of the parameter's shape (checked by ``load_state_dict``,
    #: laid out like a global parameter); None: every state tensor with ``ndim >= 1``, the
    #: convention of PyTorch's optimizers. LBFGS keeps flat vectors and declares ``()``.
    _param_shaped_state: tuple[str, ...] | None = None

    def __init__(self, params, defaults: dict):
        # foreach / fused / capturable choose torch's kernels, not the update: shardflow runs its
        # own (the same values); torch's one refusal among them is kept
        if defaults.get("fused") and defaults.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together (pass one of them)")
        if defaults.get("differentiable"):
            raise NotImplementedError(
                f"{type(self).__name__}(differentiable=True) is not supported: shardflow's optimizer "
                "steps update the parameters' arrays in place outside autograd, so no graph runs "
                "through step(); pass differentiable=False (or write the update with tensor ops, "
                "e.g. torch.func, to differentiate through it)")
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        self._scratch_cache: dict = {}
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}; pass [tensor] or model.parameters()"
            )
        params = list(params)
        if len(params) == 0:
            raise ValueError("optimizer got an empty parameter list; pass model.parameters()")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked_step", False):
            cls.step = hooked_step(step)  # the one place every optimizer's step runs its hooks

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("  # torch's layout: a blank line between groups
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._scratch_cache = {}

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """Add a group (a dict with ``'params'``); unspecified options take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs; use a list instead"
            )
        else:
            param_group["params"] = list(params)
        # named parameters, as torch >= 2.6: Optimizer(model.named_parameters()) keeps the names
        # in the group's "param_names" (state_dict carries them)
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["params"] = [p[1] for p in param_group["params"]]
            param_group["param_names"] = names
        for group in self.param_groups:
            if ("param_names" in group) != ("param_names" in param_group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if p.grad_fn is not None:
                raise ValueError("can't optimize a non-leaf Tensor; use .detach().requires_grad_()")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            # torch keeps them (each occurrence is stepped) and only warns, so programs that list
            # a tied weight twice run there; refusing them stopped those programs here
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, "
                          "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                          "more information", UserWarning, stacklevel=3)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ grads
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif p.grad.is_sparse:
                    p.grad = sparse_grad.zeroed(p.grad)
                else:
                    p.grad.array.fill(0)

    def step(self, closure=None):  # pragma: no cover - interface
        raise NotImplementedError

    def _closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _scratch(self, like: np.ndarray, slot: int = 0) -> np.ndarray:
        """A reusable temporary with ``like``'s shape and dtype (never kept in ``state``);
        different ``slot`` numbers give distinct buffers."""
        key = (like.shape, like.dtype, slot)
        buf = self._scratch_cache.get(key)
        if buf is None:
            buf = self._scratch_cache[key] = np.empty_like(like)
        return buf

    def _flat_scratch(self, n: int, dtype, slot: int = 0) -> np.ndarray:
        """A reusable flat ``(n,)`` temporary of ``dtype``: the scratch of updates that run on
        cache-sized blocks (one per dtype and slot, whatever the parameters' shapes)."""
        key = ((n,), np.dtype(dtype), slot)
        buf = self._scratch_cache.get(key)
        if buf is None:
            buf = self._scratch_cache[key] = np.empty(n, dtype=dtype)
        return buf

    def _effective_grad(self, x: np.ndarray, g: np.ndarray, weight_decay: float, maximize: bool):
        """``-g if maximize else g``, plus ``weight_decay * x`` (L2, PyTorch's non-decoupled
        form), in scratch slot 1 (slot 0 stays free for the caller); ``g`` itself when neither
        applies."""
        if not maximize and weight_decay == 0:
            return g
        gg = self._scratch(x, 1)
        np.negative(g, out=gg) if maximize else np.copyto(gg, g)
        if weight_decay != 0:
            tmp = self._scratch(x)
            np.multiply(x, weight_decay, out=tmp)
            gg += tmp
        return gg

    @staticmethod
    def _zeros_like(p: Tensor) -> Tensor:
        return Optimizer._state_like(p, np.zeros_like(p.array))

    @staticmethod
    def _state_like(p: Tensor, arr) -> Tensor:
        """A state Tensor over ``arr`` (shaped like ``p.array``): for a global parameter a
        global tensor with its layout (``arr`` is this rank's shard), else local."""
        t = _wrap(arr)
        t._spec = p._spec
        return t

    @staticmethod
    def _step_tensor() -> Tensor:
        return _wrap(np.zeros((), dtype=np.float32))

    # ------------------------------------------------------------------ state dict
    def state_dict(self) -> dict:
        """PyTorch's format: state keyed by integer index, groups with index lists."""
        self._run_state_dict_pre_hooks()
        mapping: dict[int, int] = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {mapping[id(p)]: v for p, v in self.state.items() if id(p) in mapping}
        return self._run_state_dict_post_hooks({"state": state, "param_groups": groups})

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a dict made by ``state_dict`` (ours or PyTorch's layout).

        Checks that the number of groups and the size of each group match, and that every
        state tensor fits its parameter (:func:`check_state_fits`), before changing
        anything. State tensors are copied and cast to their parameter's dtype (``step``
        stays as saved); those of a global parameter keep its layout.
        """
        state_dict = self._run_load_state_dict_pre_hooks(dict(state_dict))  # a shallow copy, as torch
        _require_key(state_dict, "param_groups")
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(
                f"loaded state dict has a different number of parameter groups: it has "
                f"{len(saved_groups)}, this optimizer has {len(groups)}; build the optimizer with "
                "the same groups as the one that was saved"
            )
        for i, (g, s) in enumerate(zip(groups, saved_groups)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(
                    f"loaded state dict contains a parameter group that doesn't match the size of "
                    f"optimizer's group: group {i} has {len(s['params'])} parameters in the state "
                    f"dict and {len(g['params'])} in this optimizer"
                )
        _require_key(state_dict, "state")  # (torch reads it after the groups' checks)
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        check_state_fits(self, {k: (id_map[k], v) for k, v in state_dict["state"].items()
                                if k in id_map})

        def cast(param, value, key=None):
            if isinstance(value, Tensor) or hasattr(value, "detach") and hasattr(value, "numpy"):
                arr = value.array if isinstance(value, Tensor) else value.detach().cpu().numpy()
                if key == "step" or arr.dtype.kind != "f":  # stays where it was (step: a CPU scalar)
                    return _wrap(arr.copy() if is_device_array(arr) else np.array(arr, copy=True))
                # PyTorch: floating state takes the parameter's dtype and device
                arr = to_device(arr, device_of(param.array))
                out = _wrap(arr.astype(param.array.dtype, copy=True))
                if self._is_param_shaped(key, value):  # checked: this rank's part, p's layout
                    out._spec = param._spec
                return out
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            return copy.deepcopy(value)

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = cast(p, v)
            else:
                state[k] = v
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups
        self._run_load_state_dict_post_hooks()

    def _is_param_shaped(self, key, value) -> bool:
        """Whether state ``key`` = ``value`` is a per-parameter tensor of the parameter's shape."""
        if key == "step" or getattr(value, "ndim", 0) < 1 or not hasattr(value, "shape"):
            return False
        return self._param_shaped_state is None or key in self._param_shaped_state


def constructor_kwargs(optimizer: Optimizer) -> dict:
    """``optimizer.defaults`` as keywords for ``type(optimizer)(params, **kwargs)`` (ZeRO and
    ``parallelize`` rebuild the user's optimizer over a shard): only the keywords its
    ``__init__`` takes. A class may record a default it sets itself (AdamW's
    ``decoupled_weight_decay=True``, as torch's) without taking it as an argument."""
    import inspect

    params = inspect.signature(type(optimizer).__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(optimizer.defaults)
    return {k: v for k, v in optimizer.defaults.items() if k in params}


def _shape(t) -> tuple:
    return tuple(int(s) for s in t.shape)  # a global tensor's .shape is its logical shape


def _layout_problem(p: Tensor, v) -> str | None:
    """Why state tensor ``v`` (of ``p``'s logical shape) cannot be ``p``'s state on this rank."""
    ps = p._spec
    vs = v._spec if isinstance(v, Tensor) else None
    if vs is not None:
        if ps is not None:
            if vs.placement == ps.placement and tuple(vs.sbp) == tuple(ps.sbp):
                return None
            return (f"it is laid out as {vs.sbp} on {vs.placement}, the parameter as {ps.sbp} on "
                    f"{ps.placement}; redistribute it like the parameter "
                    "(value.redistribute(p.placement, p.sbp)), or load the checkpoint with "
                    "dcp.load into the tensors of get_state_dict(model, optimizer), which reshards")
        if tuple(v.array.shape) == tuple(vs.shape):  # replicated: this rank holds it whole
            return None
        return (f"it is a global tensor laid out as {vs.sbp} (this rank holds "
                f"{tuple(v.array.shape)} of it), the parameter a local tensor; pass the whole "
                "value (value.full_tensor() on every rank, or get_optimizer_state_dict(model, "
                "optimizer, options=StateDictOptions(full_state_dict=True)))")
    if ps is not None and tuple(p.array.shape) != tuple(ps.shape):
        return (f"it is a plain tensor, the parameter a global tensor laid out as {ps.sbp} "
                f"(this rank holds {tuple(p.array.shape)} of it); load whole state with "
                "set_optimizer_state_dict(model, optimizer, state), which lays it out like the "
                "parameters, or into the optimizer before fully_shard / to_global")
    return None


def check_state_fits(optimizer: Optimizer, state: dict, names: dict | None = None) -> None:
    """Raise one ValueError listing every per-parameter state tensor of ``state`` (``{key:
    (parameter, {state key: value})}``) whose logical shape is not its parameter's, or whose
    layout cannot be its parameter's on this rank; ``names`` maps ``key`` to the
    parameter's name for the message. Changes nothing."""
    errors = []
    for k, (p, st) in state.items():
        if not isinstance(st, dict):
            continue
        who = f"parameter {names[k]!r}" if names and k in names else f"parameter {k}"
        want = _shape(p)
        for key, v in st.items():
            if not optimizer._is_param_shaped(key, v):
                continue
            got = _shape(v)
            if got != want:
                errors.append(f"state {key!r} of {who} has shape {got}, but the parameter has "
                              f"shape {want}")
                continue
            why = _layout_problem(p, v)
            if why is not None:
                errors.append(f"state {key!r} of {who}: {why}")
    if errors:
        raise ValueError(
            f"{type(optimizer).__name__}.load_state_dict: the loaded state does not fit this "
            "optimizer's parameters (nothing was loaded):\n  " + "\n  ".join(errors) + "\n"
            "Load state saved for the same model and optimizer; for a sharded model save and "
            "load the whole logical state: dcp.save/dcp.load of get_state_dict(model, "
            "optimizer) (or of optimizer.state_dict(), whose tensors carry their layout), then "
            "set_state_dict")


def _bump(p: Tensor) -> None:
    p._version_counter[0] += 1


__all__ = ["Optimizer", "required", "check_state_fits", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


def real_view(a):
    """torch's ``_view_as_real`` for the elementwise optimizers: a complex array as the flat
    real array of its interleaved (real, imag) components, sharing memory, so that a complex
    parameter's real and imaginary parts are stepped as independent entries (``exp_avg_sq``
    holds ``re(g)^2`` and ``im(g)^2``, not ``|g|^2``: torch's rule). Real arrays and None pass
    through. Every array of one parameter's update goes through it, so their shapes match."""
    if a is None or a.dtype.kind != "c":
        return a
    if not a.flags.c_contiguous:
        raise NotImplementedError(
            "a complex parameter, gradient or state tensor that is not contiguous cannot be "
            "stepped in place; make the parameter contiguous (p.data = p.data.contiguous())")
    return a.reshape(-1).view(a.real.dtype)


def check_fused_dtypes(optimizer: Optimizer) -> None:
    """torch's refusal of ``fused=True`` over a parameter that is not floating point (a
    complex one: torch's fused kernels take real dtypes only), before any update."""
    for group in optimizer.param_groups:
        if not group.get("fused"):
            continue
        for p in group["params"]:
            if p.grad is not None and p.array.dtype.kind not in "fV":
                raise RuntimeError(
                    "`fused=True` requires all the params to be floating point Tensors of "
                    f"supported devices: ['cpu', 'cuda'] but {p.dtype} and {p.device.type}; pass "
                    "fused=False (the default) for complex parameters")
