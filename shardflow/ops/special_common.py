"""What ``torch.special``'s ops share (``special_unary``, ``special_binary``,
``special_polynomials``): the dtype rule, host evaluation through SciPy, ``out=``, and the
node for functions PyTorch gives no derivative.

* Dtypes (PyTorch's): integer and bool inputs compute in the default float dtype; floating
  inputs keep their dtype; two-argument functions take the promoted dtype of both
  (``backend.result_type``: a Python number does not widen a tensor), then the same rule.
* Numerics: SciPy's ``scipy.special`` (imported on first use through
  ``backend/scipy_lib.py``) on a float64 copy of the input, cast back. A CuPy (GPU) array is
  evaluated on the host and the result copied back to its device, as ``ops/bessel.py``
  does: every function stays available on every device at the cost of two copies.
* ``out=``: the result is written into ``out`` (resized when its shape differs, with
  PyTorch's warning when ``out`` was not empty); like PyTorch, not while the result needs a
  gradient.
* No derivative: where PyTorch has none (Bessel functions, polynomials, ``zeta``'s first
  argument), backward raises ``NotImplementedError("the derivative for '<name>' is not
  implemented")``, PyTorch's message for ``zeta``, rather than a silent zero.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd import out_arg as _out_arg
from ..backend import CPU, device_of, dtypes, result_type, to_device
from ..backend.meta import MetaArray
from ..backend.scipy_lib import scipy_module
from ._util import as_tensor_arg
from .conversion import to_dtype

__all__: list[str] = []


def scipy_special():
    """``scipy.special``, imported on first use (never when shardflow is imported)."""
    return scipy_module("special")


def float_input(x) -> Tensor:
    """``x`` as a Tensor of a floating dtype: integers and bool go to the default dtype."""
    t = as_tensor_arg(x)
    return t if t.array.dtype.kind in "fV" else to_dtype(t, dtypes.get_default_dtype())


def float_pair(a, b) -> tuple[Tensor, Tensor]:
    """``a``, ``b`` (Tensors or Python numbers, at least one a Tensor) as two Tensors of
    their promoted floating dtype, on the device of the Tensor among them."""
    ops = [(v.dtype, v.array.ndim) if isinstance(v, Tensor) else _number(v) for v in (a, b)]
    dt = result_type(ops)
    if not dt.is_floating_point:
        dt = dtypes.get_default_dtype()
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        like = as_tensor_arg(like)
    return _as_dtype(a, dt, like), _as_dtype(b, dt, like)


def _number(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (bool, int, float)):
        return v
    raise TypeError(f"expected a Tensor or a Python number, got {type(v).__name__}")


def _as_dtype(v, dt, like: Tensor) -> Tensor:
    if isinstance(v, Tensor):
        return v if v.dtype is dt else to_dtype(v, dt)
    arr = np.asarray(v, dtype=dt.np)
    dev = device_of(like.array)
    return Tensor(arr if dev.type == "cpu" else to_device(arr, dev))


def host64(a) -> np.ndarray:
    """A float64 NumPy copy of array ``a`` (host or device)."""
    return np.asarray(to_device(a, CPU) if not isinstance(a, np.ndarray) else a, dtype=np.float64)


def like(values: np.ndarray, ref):
    """Host float64 ``values`` in ``ref``'s dtype and on ``ref``'s device."""
    values = values.astype(ref.dtype, copy=False)
    return values if isinstance(ref, np.ndarray) else to_device(values, device_of(ref))


def meta_result(*arrays):
    """For meta arrays (a shape and dtype, no data): the elementwise result, an empty meta
    array of the broadcast shape in ``arrays[0]``'s dtype; None for arrays with data."""
    if not any(isinstance(a, MetaArray) for a in arrays):
        return None
    return MetaArray(np.broadcast_shapes(*(a.shape for a in arrays)), arrays[0].dtype)


def on_host(fn, *arrays):
    """``fn`` (a SciPy ufunc or a NumPy function of float64 arrays) on ``arrays``, evaluated
    on the host in float64 and returned in ``arrays[0]``'s dtype and device (meta arrays:
    the shape only)."""
    meta = meta_result(*arrays)
    if meta is not None:
        return meta
    with np.errstate(all="ignore"):
        out = fn(*(host64(a) for a in arrays))
    return like(np.asarray(out), arrays[0])


class NoDerivative(Function):
    """``y = fn(*arrays)`` for a function PyTorch does not differentiate (apply with ``fn=``
    the array function and ``name=`` torch's name). Callers pass detached inputs
    (``no_graph``), so that, as in PyTorch, the result does not require grad and a loss that
    adds it gets no gradient through it; backward raises should a graph reach it anyway."""

    save_inputs = ()

    def forward(self, *arrays, fn=None, name=""):
        self.op_name = name
        return fn(*arrays)

    def backward(self, *grads):
        raise not_differentiable(self.op_name)

    def backward_graph(self, *grads):
        raise not_differentiable(self.op_name)


def no_graph(*tensors):
    """The inputs of a function PyTorch gives no ``grad_fn`` (the Bessel functions, the
    orthogonal polynomials): detached, so that the result does not require grad either."""
    return tuple(t.detach() if isinstance(t, Tensor) else t for t in tensors)


def not_differentiable(name: str, which: str = "") -> NotImplementedError:
    """PyTorch's error for a missing derivative, with what to do instead; ``which`` names the
    argument when the function is differentiable in the others (zeta)."""
    return NotImplementedError(
        f"the derivative for '{name}' is not implemented. torch.special.{name} has no gradient "
        f"{which}in PyTorch either; compute it without a graph (under torch.no_grad() or on "
        "input.detach()) or write the derivative as a torch.autograd.Function")


def write_out(result: Tensor, out, name: str) -> Tensor:
    """``result`` written into ``out`` (``out=``), PyTorch's way (``autograd/out_arg.py``);
    ``result`` itself when ``out`` is None."""
    if out is None:
        return result
    return _out_arg.write_out(result, out, name)


def with_out(op, name: str):
    """``op`` with a keyword ``out=`` (for the ``torch.special`` names that are existing ops:
    ``special.erf(x, out=y)``)."""

    def special_op(*args, out=None, **kwargs):
        return write_out(op(*args, **kwargs), out, name)

    special_op.__name__ = special_op.__qualname__ = name
    special_op.__doc__ = f"``torch.special.{name}``: ``torch.{getattr(op, '__name__', name)}`` " \
                         "with ``out=``."
    special_op.__wrapped__ = op
    return special_op
