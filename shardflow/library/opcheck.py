"""``torch.library.opcheck``: check that an operator's registrations are consistent.

torch's four tests, as far as an eager framework can run them (each on copies of the
example arguments, so the caller's tensors are untouched):

* ``test_schema`` — runs the operator and compares every input with its copy from before:
  an input that changed but is not declared mutable (``mutates_args`` / ``Tensor(a!)``)
  fails with torch's message ("Argument x is not defined as mutable but was mutated").
* ``test_autograd_registration`` — an operator that returns a floating Tensor, called with an
  input that requires grad, needs a way to differentiate: a ``register_autograd`` formula,
  an ``Autograd`` or ``CompositeImplicitAutograd`` kernel, or (custom_op) it fails later.
* ``test_faketensor`` — the fake kernel (``register_fake``) runs on the same arguments and
  its outputs must match the real ones in shape, dtype and device; an operator that returns
  Tensors and has none fails with torch's "no fake impl registered" message. (torch runs it
  on FakeTensors; here it runs on the real ones and only the metadata is compared.)
* ``test_aot_dispatch_dynamic`` — the operator's outputs with autograd on must equal a plain
  run's (from the same RNG state) within ``rtol``/``atol`` (torch compares a traced, AOT, run with eager; shardflow has no
  tracer); when an input requires grad, backward with gradient ones through each
  differentiable output must run (a ``custom_op`` without ``register_autograd`` fails here,
  as in torch).

Returns ``{test name: "SUCCESS"}``; a failure raises ``OpCheckError`` naming the test (or,
with ``raise_exception=False``, is put in the dict).
"""

from __future__ import annotations

from ..autograd import Tensor, grad, no_grad
from ..backend import random as _random
from ..backend.xp import get_array_module
from .operator import opdef_of

__all__ = ["opcheck", "OpCheckError", "DEFAULT_TEST_UTILS"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """torch's ``torch.testing._internal.optests.OpCheckError``."""


def _copy(v):
    if isinstance(v, Tensor):
        with no_grad():
            c = v.detach().clone()
        return c.requires_grad_(v.requires_grad) if v.requires_grad else c
    if isinstance(v, (list, tuple)):
        return type(v)(_copy(x) for x in v)
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    return v


def _flat(v):
    if isinstance(v, Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _flat(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _flat(x)]
    return []


def _bound(opdef, args, kwargs):
    values = opdef.schema.bind(tuple(args), dict(kwargs))
    return list(zip(opdef.schema.arguments, values))


def _test_schema(opdef, op, args, kwargs):
    a, k = _copy(args), _copy(kwargs)
    before = [(arg, [t.array.copy() for t in _flat(v)]) for arg, v in _bound(opdef, a, k)]
    with no_grad():
        op(*a, **k)
    for (arg, saved), (_, v) in zip(before, _bound(opdef, a, k)):
        changed = any(not bool(get_array_module(s).array_equal(s, t.array, equal_nan=True))
                      for s, t in zip(saved, _flat(v)))
        if changed and not arg.is_write:
            raise AssertionError(f"Argument {arg.name} is not defined as mutable but was mutated")


def _differentiable_outputs(out):
    return [t for t in _flat(out) if t.requires_grad]


def _test_autograd_registration(opdef, op, args, kwargs):
    inputs = _flat(args) + _flat(kwargs)
    if not any(t.requires_grad for t in inputs):
        return
    has_way = (opdef.autograd_cls is not None or opdef.custom_op
               or any(key in opdef.kernels for key in ("Autograd", "CompositeImplicitAutograd")))
    if not has_way:
        raise AssertionError(
            f"{opdef.qualname}: an input requires grad but the operator has no autograd registration "
            "(register_autograd, or an 'Autograd' or 'CompositeImplicitAutograd' kernel)")


def _test_faketensor(opdef, op, args, kwargs):
    a, k = _copy(args), _copy(kwargs)
    with no_grad():
        real = op(*a, **k)
    outs = _flat(real)
    fake_fn = opdef.fake or opdef.kernels.get("Meta")
    if fake_fn is None:
        if not outs:
            return  # nothing to describe: torch makes the fake kernel of such an op itself
        raise AssertionError(
            f"There was no fake impl registered for <CustomOpDef({opdef.qualname})>. This is necessary "
            f"for torch.compile/export/fx tracing to work. Please use `{opdef.name}.register_fake` to "
            "add an fake impl.")
    values = _bound(opdef, _copy(args), _copy(kwargs))
    pos = [v for arg, v in values if not arg.kwarg_only]
    kw = {arg.name: v for arg, v in values if arg.kwarg_only}
    with no_grad():
        fake = _flat(fake_fn(*pos, **kw))
    if len(fake) != len(outs):
        raise AssertionError(f"{opdef.qualname}: the fake impl returned {len(fake)} Tensors, the operator {len(outs)}")
    for f, r in zip(fake, outs):
        for what, fv, rv in (("Shapes", f.shape, r.shape), ("Dtypes", f.dtype, r.dtype),
                             ("Devices", f.device, r.device)):
            if fv != rv:
                raise AssertionError(
                    f"When comparing the output of {opdef.ns}.{opdef.name}.default on FakeTensor and "
                    f"concrete Tensors, found mismatched tensor metadata: {what} {fv} and {rv} are not equal!")


_DEFAULT_TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _compare(got, want, rtol, atol, what: str) -> None:
    """``got`` and ``want`` (nested outputs) equal within rtol/atol (torch.testing's defaults
    per dtype when None; integers and bools exactly)."""
    g, w = _flat(got), _flat(want)
    if len(g) != len(w):
        raise AssertionError(f"{what}: {len(g)} output Tensors, expected {len(w)}")
    for a, b in zip(g, w):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise AssertionError(f"{what}: output of shape {tuple(a.shape)} {a.dtype}, expected "
                                 f"{tuple(b.shape)} {b.dtype}")
        x, y = a.detach().cpu().numpy(), b.detach().cpu().numpy()
        r, t = (rtol, atol) if rtol is not None else _DEFAULT_TOL.get(str(a.dtype).split(".")[-1], (0.0, 0.0))
        xp = get_array_module(x)
        if not bool(xp.allclose(x, y, rtol=r, atol=t, equal_nan=True)):
            raise AssertionError(f"{what}: outputs differ beyond rtol={r}, atol={t} (max abs diff "
                                 f"{float(xp.abs(x.astype('float64') - y.astype('float64')).max())})")


def _test_aot_dispatch_dynamic(opdef, op, args, kwargs, rtol=None, atol=None):
    a, k = _copy(args), _copy(kwargs)
    state = _random.get_rng_state()
    with no_grad():
        reference = op(*_copy(args), **_copy(kwargs))
    _random.set_rng_state(state)  # the same draws for an operator that samples
    out = op(*a, **k)
    # torch compares its traced (AOT) run with eager; shardflow has no tracer, so the run with
    # autograd on is compared with a plain one, within rtol/atol
    _compare(out, reference, rtol, atol, f"{opdef.qualname} with autograd vs without")
    leaves = [t for t in _flat(a) + _flat(k) if t.requires_grad]
    outs = _differentiable_outputs(out)
    if leaves and outs:
        grad([o for o in outs], leaves, grad_outputs=[o.new_ones(o.shape) for o in outs], allow_unused=True)


_TESTS = {"test_schema": _test_schema, "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor, "test_aot_dispatch_dynamic": _test_aot_dispatch_dynamic}


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception: bool = True,
            rtol=None, atol=None) -> dict:
    """torch.library.opcheck (module docstring). ``rtol``/``atol`` (given together) bound
    ``test_aot_dispatch_dynamic``'s comparison of outputs (torch.testing's defaults per dtype
    when None)."""
    if (rtol is None) != (atol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify both")
    opdef = opdef_of(op)
    kwargs = {} if kwargs is None else kwargs
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    unknown = [t for t in test_utils if t not in _TESTS]
    if unknown:
        raise ValueError(f"opcheck(test_utils=...): unknown tests {unknown}; expected some of {list(_TESTS)}")
    results = {}
    for name in test_utils:
        try:
            if name == "test_aot_dispatch_dynamic":
                _TESTS[name](opdef, op, args, kwargs, rtol, atol)
            else:
                _TESTS[name](opdef, op, args, kwargs)
            results[name] = "SUCCESS"
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for stack trace)") from e
            results[name] = e
    return results
