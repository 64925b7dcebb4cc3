"""``torch.cond`` and ``torch.while_loop`` in eager mode.

torch's versions are higher-order operators for ``torch.compile``/``export``; called eagerly
they check their arguments and run the Python control flow (a Python ``bool``/number ``pred``
runs the branch directly; a tensor one goes through torch's compiler, with the same result).
shardflow has no graph capture of Python control flow, so both always run eagerly: ``cond``
calls the branch ``pred`` selects on ``operands``, ``while_loop`` calls ``body_fn`` while
``cond_fn`` is true. Gradients flow through whatever ran (the branch taken, every iteration),
as ordinary autograd. The argument checks and their messages are torch 2.13's
(``torch/_higher_order_ops/cond.py``, ``while_loop.py``).
"""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["cond", "while_loop"]


def _leaves(tree):
    """The leaves of a nested dict/list/tuple (torch's pytree for these containers)."""
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _leaves(v)
    elif isinstance(tree, list | tuple):
        for v in tree:
            yield from _leaves(v)
    else:
        yield tree


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``. ``pred``: a Python
    bool/number, or a one-element tensor; ``operands``: a tuple/list of (nested) tensors."""
    if isinstance(pred, bool | int | float):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, tuple | list) or any(not isinstance(t, Tensor) for t in _leaves(operands)):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only "
            f"consists of tensor leaves, but got {operands}."
        )
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def _check_pred(pred) -> None:
    if isinstance(pred, bool) or (isinstance(pred, Tensor) and tuple(pred.shape) == ()
                                  and pred.dtype.name == "bool"):
        return
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred}")


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)``; returns the final
    ``carried`` as a tuple (tensors cloned when the body never ran, as torch's does).
    ``cond_fn`` must return a bool or a boolean 0-d tensor; ``body_fn`` a tuple as long as
    ``carried_inputs`` (a tuple/list of tensors and ints, possibly nested)."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    leaves = list(_leaves(carried_inputs))
    if not all(isinstance(a, Tensor | int) for a in leaves):
        raise AssertionError(
            f"{tuple(leaves)} can only be of (<class 'torch.Tensor'>, <class 'int'>, <class 'torch.SymInt'>) "
            f"but got {tuple(type(a) for a in leaves)}"
        )
    if not isinstance(carried_inputs, tuple | list):
        raise RuntimeError(f"carried_inputs must be a tuple or list but got {type(carried_inputs)}")
    carried = tuple(carried_inputs)
    go = cond_fn(*carried)
    _check_pred(go)
    if not go:
        return tuple(v.clone() if isinstance(v, Tensor) else v for v in carried)
    while go:
        out = body_fn(*carried)
        if not isinstance(out, tuple):
            raise AssertionError(f"body_fn should return a tuple but got {type(out)}")
        if len(out) != len(carried):
            raise AssertionError(
                f"body_fn should return the same number of elements as carried_inputs, got {len(out)} vs "
                f"{len(carried)}"
            )
        carried = out
        go = cond_fn(*carried)
    return carried
