"""Saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``): pack what an op keeps
for backward when it is saved, unpack it when backward needs it.

What counts as "saved": shardflow's nodes keep what their backward reads as attributes of
the node (``Function.__dict__``: ``self.x``, ``self.mask``...; see function.py). When hooks
are active, every attribute of a new node that is a backend array (NumPy/CuPy), a Tensor, or
a list/tuple holding some, is one saved tensor: ``pack_hook`` gets it as a Tensor and its
result replaces the attribute. An input kept under its conventional name (``x``, ``a``,
``b``) is given as torch gives it: the input itself for a leaf, else a Tensor on its data
with its history (``grad_fn=`` its producer); the output kept as ``y`` (``save_output``) with
this node as its ``grad_fn``; a binary op's second input is packed (and unpacked) before
its first, in torch's order; anything else is a new Tensor around the array. Which tensors an op saves is shardflow's choice, not torch's: ``x * y`` saves what
torch saves (the operand each needed gradient reads; ``x * 2`` packs nothing), but e.g. ``linear`` or a loss may save a different number of tensors than
torch's kernels, so the number of pack calls for a model can differ from torch's (values and
gradients do not). A custom ``autograd.Function`` packs exactly what ``ctx.save_for_backward``
got, as torch does, and ``ctx.saved_tensors`` unpacks on every read (torch's rule).

Algorithm:

* ``_stack`` (module level, one list for the process) holds the active hooks, innermost
  last, each tagged with the thread that entered it (torch's hooks are thread-local: a
  thread sees only its own). ``Function.apply`` and the binary-op fast path test ``if
  _stack:`` once per recorded op; nothing else is on the per-op path while no hooks are
  active;
* :func:`pack_node` (after forward) replaces each saved attribute by its packed value, keeps
  them under ``_sf_packed`` (so freeing the node, ``__dict__.clear()``, frees them too), and
  adds :data:`UNPACK` to the node's ``_pre_hooks``: the engines' fast path already leaves a
  node with pre-hooks to the slow path, which calls :func:`call_unpacked` — unpack every
  packed value back into the attribute, run backward, drop the unpacked arrays again (a
  second backward, ``retain_graph=True``, unpacks again, as torch does);
* the pack hook runs with grad mode off, as torch runs it (an op inside it records no graph,
  so nothing it computes is packed again); the unpack hook runs as a plain Python call.
"""

from __future__ import annotations

import threading

import numpy as np

from ..backend import is_device_array
from .saved_names import SAVED_INPUT_NAMES, SAVED_OUTPUT_NAME
from .tensor import Tensor, _wrap

# (thread ident, pack_hook, unpack_hook, independent), innermost last (module docstring);
# independent: the packed values share no memory with the live tensors (allow_mutation_on_
# saved_tensors clones them), so the in-place-change check is dropped for what they pack
_stack: list = []

# the key pack_node adds to a node's _pre_hooks (engine.py routes such a node to its slow
# path, where call_unpacked runs its backward)
UNPACK = "saved tensors hooks"

_disabled = threading.local()  # .message: the error disable_saved_tensors_hooks set


def current_hooks():
    """The innermost ``(pack_hook, unpack_hook, independent)`` entered by this thread, or None."""
    me = threading.get_ident()
    for ident, pack, unpack, independent in reversed(_stack):
        if ident == me:
            return pack, unpack, independent
    return None


def push(pack_hook, unpack_hook, independent: bool = False) -> None:
    message = getattr(_disabled, "message", None)
    if message is not None:
        raise RuntimeError(message)
    _stack.append((threading.get_ident(), pack_hook, unpack_hook, independent))


def pop() -> None:
    me = threading.get_ident()
    for k in range(len(_stack) - 1, -1, -1):
        if _stack[k][0] == me:
            del _stack[k]
            return


def _is_array(v) -> bool:
    """A NumPy or CUDA (CuPy) array: what an op's node keeps of a tensor."""
    return isinstance(v, np.ndarray) or is_device_array(v)


class _Packed:
    """One packed saved value: what ``pack_hook`` returned, the hook that unpacks it, and
    whether the attribute held a Tensor (else a bare array)."""

    __slots__ = ("value", "unpack", "was_tensor")

    def __init__(self, value, unpack, was_tensor: bool):
        self.value = value
        self.unpack = unpack
        self.was_tensor = was_tensor

    def unpacked(self, where: str):
        t = self.unpack(self.value)
        if not isinstance(t, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(t).__name__} (while unpacking {where}; fix: unpack_hook must "
                "return a Tensor with the packed tensor's values)"
            )
        return t if self.was_tensor else t.array


def _pack_one(v, pack, unpack, as_tensor=None):
    if isinstance(v, Tensor):
        return _Packed(_call_pack(pack, v), unpack, True)
    if _is_array(v):
        return _Packed(_call_pack(pack, _wrap(v) if as_tensor is None else as_tensor), unpack, False)
    return None


def _call_pack(pack, t: Tensor):
    """``pack(t)`` with grad mode off, as torch runs pack hooks (an op in the hook records
    no graph, so it is not packed again)."""
    from .grad_mode import no_grad

    with no_grad():
        return pack(t)


# the conventional names of a node's inputs 0 and 1 (saved_names.py)
_INPUT_OF = {name: i for i, names in enumerate(SAVED_INPUT_NAMES[:2]) for name in names}


def _torch_pack_order(item) -> int:
    """torch saves a binary op's second input before its first (``x * y`` packs ``y``, then
    ``x``: its derivative formulas name ``other`` first); the rest keep their order."""
    return 0 if item[0] == "b" else 1


def _as_torch_saves(fn, name: str, v):
    """What torch's pack hook gets for the array ``v`` kept under ``name``: for an input, the
    input with its history (a leaf: the leaf itself; ``grad_fn=`` its producer), for the
    output ``y`` a Tensor whose ``grad_fn`` is this node -- as torch passes the saved
    variables themselves; None (a plain Tensor around the array) for anything else."""
    if not _is_array(v):
        return None
    try:
        if name in _INPUT_OF:
            t = fn.saved_input(_INPUT_OF[name], v)
            return t if isinstance(t, Tensor) and t.array is v else None
        if name == SAVED_OUTPUT_NAME and fn.save_output:
            return fn.saved_output(0, v)
    except (IndexError, RuntimeError, TypeError):
        return None
    return None


def pack_node(fn) -> None:
    """Pack the saved values of the new node ``fn`` with this thread's innermost hooks
    (module docstring); a no-op when another thread's hooks are the active ones."""
    hooks = current_hooks()
    if hooks is None:
        return
    pack, unpack, independent = hooks
    if independent:
        fn._saved_versions = None
    d = fn.__dict__
    packed = {}
    for name, v in sorted(d.items(), key=_torch_pack_order):
        if type(v) is list or type(v) is tuple:
            items = [_pack_one(e, pack, unpack) for e in v]
            if any(p is not None for p in items):
                packed[name] = (type(v), [e if p is None else p for e, p in zip(v, items)])
                del d[name]
            continue
        p = _pack_one(v, pack, unpack, _as_torch_saves(fn, name, v))
        if p is not None:
            packed[name] = p
            del d[name]
    if not packed:
        return
    d["_sf_packed"] = packed
    if fn._pre_hooks is None:
        fn._pre_hooks = {}
    fn._pre_hooks[UNPACK] = None


def call_unpacked(fn, backward, *args):
    """``backward(*args)`` with ``fn``'s packed values unpacked into its attributes for the
    call, dropped again after it (a retained graph keeps only the packed values)."""
    d = fn.__dict__
    packed = d.get("_sf_packed")
    if packed is None:  # released: backward raises its own "second time" error
        return backward(*args)
    where = f"a tensor saved by {fn.name()}"
    for name, p in packed.items():
        if type(p) is tuple:
            kind, items = p
            d[name] = kind(e.unpacked(where) if isinstance(e, _Packed) else e for e in items)
        else:
            d[name] = p.unpacked(where)
    try:
        return backward(*args)
    finally:
        if "_sf_packed" in d:
            for name in packed:
                d.pop(name, None)


def pack_custom_saved(node, saved: list) -> None:
    """Pack what a custom Function's ``ctx.save_for_backward`` kept (``custom_function``'s
    entries); ``saved_tensors`` unpacks them on every read (:func:`unpack_custom_entry`)."""
    hooks = current_hooks()
    if hooks is None:
        return
    pack, unpack, independent = hooks
    for k, entry in enumerate(saved):
        if entry is None:
            continue
        kind, index, tensor, array, counter, version = entry
        t = tensor if tensor is not None and tensor.array is array else _wrap(array, version=counter)
        if independent:  # a counter of its own: later in-place changes do not reach the copy
            counter = [version]
        saved[k] = (kind, index, tensor, _Packed(_call_pack(pack, t), unpack, True), counter, version)


def unpack_custom_entry(node, packed: _Packed) -> Tensor:
    """The Tensor ``unpack_hook`` gives back for a custom Function's saved entry."""
    return packed.unpacked(f"a tensor saved by {node.name()} (ctx.saved_tensors)")


def enter_disabled(message: str):
    """Set the message :func:`push` raises (returns the previous one, for the exit)."""
    if _stack and current_hooks() is not None:
        raise RuntimeError(message)
    previous = getattr(_disabled, "message", None)
    _disabled.message = message
    return previous


def exit_disabled(previous) -> None:
    _disabled.message = previous


def disabled_message():
    return getattr(_disabled, "message", None)
