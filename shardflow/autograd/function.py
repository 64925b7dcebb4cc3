"""``Function``: one node of the define-by-run graph (Chainer's function, PyTorch's Node).

A subclass implements ``forward(self, *arrays, **params)`` and ``backward(self, *grads)``
on raw backend arrays — no Tensor is made inside either, which keeps the per-op cost of
the engine near one Python call. ``apply`` wraps them: it unwraps Tensor arguments, runs
``forward``, and when gradients are wanted links the output Tensors to this node.

Graph edges (``next``) point at the *producer* of each input, captured when the op ran:
``(function, output_nr)`` for an intermediate, ``(leaf_tensor, 0)`` for a leaf, ``None``
for an input that needs no gradient. Holding producers rather than tensors is what lets an
in-place op rebase a tensor's history without making a cycle. The node stores them packed
(``_edges``, what the engine reads): the producer Function itself for its output 0, the leaf
Tensor itself, ``(function, output_nr)`` only for a later output. A pair per edge was two
tuples per binary op, and every tuple that outlives the op is work for the cyclic garbage
collector (each collection walks the young objects: at 7 tracked objects per op it was
a fifth of a 16-element op's instructions); ``next`` gives the pairs.

Saved-tensor checks: a subclass declares which inputs its backward reads (``save_inputs``,
indices; default all) and whether it reads its output (``save_output``). ``apply`` records
their version counters (``_saved_versions``: a flat tuple of counter, version, input index
per saved tensor; index -1-k for output k); the engine refuses to run backward if one
changed in between. While saved-tensor hooks are active (``saved_hooks.py``), ``apply`` packs
the node's saved attributes after forward (one module-level test per op otherwise).

What ``backward`` returns: one gradient (or None) per positional argument of ``apply``, each
of that argument's shape; the engine checks both (``engine._check_gradient_count``,
``engine._fit_gradient``) against ``next`` and the producer's recorded output shape
(``_out_shape``, or ``_out_meta`` for several outputs).

State a subclass keeps on ``self`` lives in ``__dict__`` and is dropped by ``release`` after
backward unless ``retain_graph=True``.
"""

from __future__ import annotations

import numpy as np

from ..backend import device_of, to_device
from . import grad_mode
from .grad_mode import _inference_on, mark_inference
from .grad_mode import _off as _grad_off
from .node_names import torch_node_name
from .saved_hooks import _stack as _saved_hooks
from .saved_hooks import pack_node
from .saved_names import SAVED_INPUT_NAMES
from .tensor import Tensor, _foreign, _wrap

_new_tensor = object.__new__

# One tuple per distinct output shape, shared by the nodes (``Function._out_shape``): the
# tuple ``out.shape`` makes is tracked by the cyclic garbage collector, and a node keeps it
# as long as the graph lives, so without this every op left one more object for each
# collection to walk; a looked-up temporary is freed at once. Cleared when it grows past
# _MAX_SHAPES (programs with ever-changing shapes), which only costs new entries.
_SHAPES: dict = {}
_MAX_SHAPES = 4096
_ndarray = np.ndarray
_np_generic = np.generic
_np_asarray = np.asarray


class _TorchSaved:
    """A non-data descriptor for one of torch's ``_saved_<name>`` attributes of a node
    (an instance attribute of that name, e.g. a custom Function's own, still wins)."""

    __slots__ = ("name",)

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, fn, owner=None):
        if fn is None:
            return self
        from .saved_attributes import saved_attribute  # (it imports this module)

        return saved_attribute(fn, self.name)


class Function:
    # ``_torch_name``: torch's node name when the op that made the node chose it at forward,
    # or a basic index's ``(index, idx, shape)`` to derive it from when asked (a slot, so it
    # outlives backward's freeing of ``__dict__``; node_names.py)
    __slots__ = ("_edges", "_freed", "_pre_hooks", "_saved_versions", "_out_meta", "_out_shape",
                 "needs_input_grad", "_torch_name", "__dict__")

    save_inputs: tuple[int, ...] | None = None  # None: every Tensor input may be read
    save_output: bool = False

    # torch's grad_fn._saved_self / _saved_other / _saved_result (saved_attributes.py):
    # descriptors on these three names only. (A __getattr__ here would do the same, and turn
    # off CPython's attribute specialisation for every node attribute: 8% of a small op.)
    _saved_self = _TorchSaved()
    _saved_other = _TorchSaved()
    _saved_result = _TorchSaved()

    def __init_subclass__(cls, **kwargs):
        """A PyTorch-style custom Function (static ``forward(ctx, ...)``) gets the ctx-based
        ``apply`` of custom_function.py. Runs once per class: internal ops pay nothing."""
        super().__init_subclass__(**kwargs)
        from .custom_function import adopt_custom_function

        adopt_custom_function(cls)

    @property
    def next(self) -> tuple:
        """The graph edges, one per positional input of ``apply``: ``(producer Function,
        output number)``, ``(leaf Tensor, 0)`` or None (see the module docstring)."""
        return tuple(map(_edge_pair, self._edges))

    @property
    def next_functions(self) -> tuple:
        """PyTorch's view of the edges: ``(node, output number)`` per input, where a leaf's
        node is an :class:`AccumulateGrad` holding it (``.variable``) and an input that needs
        no gradient is ``(None, 0)`` — what graph walkers such as torchviz read. A node
        class whose torch counterpart lists its inputs otherwise defines
        ``torch_next_functions(pairs)`` (``Linear``: torch's ``addmm(bias, x, weight.t())``)."""
        pairs = tuple((None, 0) if pair is None
                      else (AccumulateGrad(pair[0]), 0) if isinstance(pair[0], Tensor) else pair
                      for pair in self.next)
        reorder = getattr(self, "torch_next_functions", None)
        return pairs if reorder is None else reorder(pairs)

    def forward(self, *arrays, **params):  # pragma: no cover - interface
        raise NotImplementedError

    def backward(self, *grad_outputs):  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **params):
        """Run the op on Tensors (and plain values), recording the graph when needed.

        This is the per-op hot path (a 16-element op costs a few microseconds, and this
        method is most of it): one pass over ``args`` collects the arrays, the graph edges
        and the saved inputs' version counters; no generator, comprehension or helper call.
        """
        fn = cls()
        arrays = []
        edges = []
        needs = []
        need = False
        array_type = None  # NumPy's or CuPy's: a second kind means tensors on two devices
        for a in args:
            if isinstance(a, Tensor):
                arr = a.array
                if type(arr) is not array_type:
                    if array_type is not None:
                        return _apply_on_one_device(cls, args, params)
                    array_type = type(arr)
                arrays.append(arr)
                if a.requires_grad:
                    need = True
                    producer = a.grad_fn
                    # packed edge (module docstring): the leaf, the producer, or a pair
                    edges.append(a if producer is None else producer if a._output_nr == 0
                                 else (producer, a._output_nr))
                    needs.append(True)
                    continue
            else:
                arrays.append(a)
            edges.append(None)
            needs.append(False)
        if not need or (_grad_off[0] and not grad_mode._state.enabled):
            out = fn.forward(*arrays, **params)
            out = tuple(_wrap(o) for o in out) if type(out) is tuple else _wrap(out)
            return mark_inference(out) if _inference_on[0] else out

        fn.needs_input_grad = tuple(needs)
        out = fn.forward(*arrays, **params) if params else fn.forward(*arrays)
        fn._freed = False
        fn._pre_hooks = None
        fn._edges = tuple(edges)
        saved = cls.save_inputs
        if saved == ():
            fn._saved_versions = None
        else:
            # counter, version at save, input index: three entries per saved Tensor input,
            # in one flat tuple (one allocation); the engine compares before backward
            versions = []
            for i in range(len(args)) if saved is None else saved:
                a = args[i]
                if isinstance(a, Tensor):
                    counter = a._version_counter
                    versions += (counter, counter[0], i)
            fn._saved_versions = tuple(versions) if versions else None
        if _saved_hooks:  # saved-tensor hooks are active (saved_hooks.py): the only test they cost
            pack_node(fn)
        if type(out) is tuple:
            return _link_outputs(fn, out)
        fn._out_meta = None
        # the engine checks the gradient it receives against it; interned (see _SHAPES)
        shape = out.shape
        try:
            fn._out_shape = _SHAPES[shape]
        except KeyError:
            fn._out_shape = _interned_shape(shape)
        # _wrap(out, True, fn, 0), inlined
        if type(out) is not _ndarray and isinstance(out, _np_generic):
            out = _np_asarray(out)
        t = _new_tensor(Tensor)
        t.array = out
        t.requires_grad = True
        t.grad = None
        t.grad_fn = fn
        t._output_nr = 0
        t._version_counter = [0]
        t._hooks = None
        t._post_hooks = None
        t._spec = None
        if cls.save_output:
            _record_output_versions(fn, (t,))
        return t

    @classmethod
    def apply_source(cls, arrays, **attrs) -> tuple:
        """Tensors requiring grad for ``arrays``, made by a new node of this class that has
        no inputs: gradients reaching them arrive in its ``backward`` (one per output) and go
        no further in this process. ``attrs`` are set on the node. Distributed autograd's
        receive node uses it (its backward sends the gradients to the worker the tensors came
        from); not on any per-op path."""
        fn = cls()
        fn.__dict__.update(attrs)
        fn._freed = False
        fn._pre_hooks = None
        fn._edges = ()
        fn._saved_versions = None
        fn.needs_input_grad = ()
        fn._out_meta = [(a.shape, a.dtype) for a in arrays]
        return tuple(_wrap(a, True, fn, i) for i, a in enumerate(arrays))

    # ------------------------------------------------ higher-order gradients (create_graph)
    # A subclass may define ``backward_graph(self, *grad_outputs)``: ``backward``'s gradients
    # computed from Tensors with differentiable ops, so that they carry a graph (see
    # higher_order.py). It reads its saved inputs and outputs through the two helpers below;
    # neither is on the per-op path (``apply`` is unchanged).

    def saved_input(self, i: int, array=None) -> Tensor:
        """Positional input ``i`` of ``apply`` as a Tensor with the original input's autograd
        history: the leaf itself, or a Tensor whose producer is the one edge ``i`` records
        (so differentiating through it reaches the same graph); a constant Tensor when that
        input needed no gradient (a Python number argument is returned as is). ``array``: the input's array as the node saved it; by
        default the node's conventional attribute (``x`` for a one-input op, ``a``/``b``/``c``
        for inputs 0/1/2)."""
        if array is None:
            array = _conventional_saved_array(self, i)
        edge = self._edges[i] if i < len(self._edges) else None
        if edge is None:  # a constant (a Python number stays a number)
            return _wrap(array) if hasattr(array, "dtype") else array
        if type(edge) is tuple:
            producer, k = edge
        elif isinstance(edge, Function):
            producer, k = edge, 0
        else:  # the leaf itself (its array is the saved one: version-checked before backward)
            return edge
        return _wrap(array, True, producer, k)

    def saved_output(self, k: int = 0, array=None) -> Tensor:
        """Output ``k`` of this node as a Tensor linked to it (``grad_fn`` is this node,
        ``output_nr`` ``k``), for a ``backward_graph`` that reads its output (exp, tanh,
        sigmoid). ``array``: the output's array as the node saved it (default ``self.y``)."""
        if array is None:
            array = self.__dict__.get("y")
            if array is None:
                raise RuntimeError(
                    f"{type(self).__name__}.saved_output({k}): the node keeps no output under self.y; "
                    "pass the saved array: self.saved_output(k, self.<attribute>)"
                )
        return _wrap(array, True, self, k)

    def release(self) -> None:
        """Free what forward saved; a second backward through this node then fails clearly."""
        self.__dict__.clear()
        self._freed = True

    # ------------------------------------------------ torch.autograd.graph.Node's hooks
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node's backward; a non-None result
        replaces ``grad_inputs`` (graph_hooks.py). Returns a handle with ``remove()``."""
        from .graph_hooks import register_node_hook

        return register_node_hook(self, fn, pre=False)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node's backward; a non-None result replaces
        ``grad_outputs``. Returns a handle with ``remove()``."""
        from .graph_hooks import register_node_hook

        return register_node_hook(self, fn, pre=True)

    @property
    def metadata(self) -> dict:
        """A dict a program may keep anything in (torch's ``Node.metadata``); kept in
        ``_pre_hooks`` (under a key that is not an output number), which outlives backward."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return self._pre_hooks.setdefault("metadata", {})

    def name(self) -> str:
        """torch's name for this node, e.g. ``'MulBackward0'`` (node_names.py)."""
        return torch_node_name(self)

    def __repr__(self) -> str:
        # torch's generic node is named 'torch::autograd::NotImplemented' but its type (which
        # the repr shows) is 'NotImplemented'
        return f"<{self.name().rsplit('::', 1)[-1]} object at {id(self):#x}>"


def _conventional_saved_array(fn: Function, i: int):
    """The array a node keeps for input ``i`` under the usual names (``x``; ``a``, ``b``, ``c``)."""
    d = fn.__dict__
    names = SAVED_INPUT_NAMES[i] if i < len(SAVED_INPUT_NAMES) else ()
    for name in names:
        if d.get(name) is not None:
            return d[name]
    raise RuntimeError(
        f"{type(fn).__name__}.saved_input({i}): the node keeps no array for input {i} under a usual "
        f"name ({', '.join(names) or 'none for this index'}); pass it: "
        f"self.saved_input({i}, self.<attribute>)"
    )


def binary_operator(cls, general, kinds: str | None = None, dunder: bool = False):
    """The two-argument form of a two-input op (``x * y``, ``mul(x, y)``): ``operator(input,
    other)`` runs ``cls``'s node directly when both are Tensors of one dtype (of a kind in
    ``kinds``, e.g. ``"f"``; any when None) on one device, and calls ``general(input, other)``
    (the op's functional form: promotion, scalars, devices) for anything else.

    This is the binary ops' hot path, written out once here: the node, edges, saved
    versions and output are what ``cls.apply(input, other)`` makes (tests/autograd compares
    their graphs), with the per-argument loop unrolled, no list building, and what ``cls``
    declares (``save_inputs``, ``save_output``) read once, here, rather than per call. The
    ops register it as their ``operator`` (``dispatch.register``), so ``Tensor.__mul__`` is
    this function itself: no frame runs before it.

    ``cls.partial_nodes`` (optional): the node classes to make instead when only input 0 /
    only input 1 needs a gradient (``Mul``'s keep only the operand that gradient reads, as
    torch's MulBackward0 does); ``cls.apply`` always makes ``cls``.

    ``dunder``: the form for the operator methods. As PyTorch's, a TypeError about an
    operand that is not a Tensor, number or array data becomes NotImplemented, so that Python
    tries the other operand's reflected method (``tensor + masked_tensor``) and otherwise
    raises its own "unsupported operand type(s)". The functional form raises the TypeError.
    """
    save_both, save_one, save_output = _binary_plan(cls)
    # the nodes for when only input 0 / only input 1 needs a gradient, and what they save: one
    # closure variable (each one more is copied into every call's frame: ~18 instructions)
    only_a, only_b = getattr(cls, "partial_nodes", (cls, cls))
    partial = (only_a, _binary_plan(only_a), only_b, _binary_plan(only_b))

    def operator(input, other):
        if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
            if dunder:
                try:
                    return general(input, other)
                except TypeError:
                    if _foreign(other):
                        return NotImplemented
                    raise
            return general(input, other)
        x = input.array
        y = other.array
        if x.dtype is not y.dtype or type(x) is not type(y) or \
                (kinds is not None and x.dtype.kind not in kinds):
            return general(input, other)
        if input.requires_grad:  # packed edges (module docstring)
            producer = input.grad_fn
            ea = input if producer is None else producer if input._output_nr == 0 \
                else (producer, input._output_nr)
        else:
            ea = None
        if other.requires_grad:
            producer = other.grad_fn
            eb = other if producer is None else producer if other._output_nr == 0 \
                else (producer, other._output_nr)
        else:
            eb = None
        # (a tuple indexed by bools is not a specialised subscript: ~160 instructions; the
        # forward changes no input, so the versions read before it are the ones after it; two
        # Tensors needing gradients, the common case, pass three tests)
        if ea is None or eb is None or (_grad_off[0] and not grad_mode._state.enabled):
            if (ea is None and eb is None) or (_grad_off[0] and not grad_mode._state.enabled):
                out = cls().forward(x, y)
                out = tuple(_wrap(o) for o in out) if type(out) is tuple else _wrap(out)
                return mark_inference(out) if _inference_on[0] else out
            if ea is None:
                fn = partial[2]()
                fn.needs_input_grad = _NEEDS_B
                fn._saved_versions = _saved_versions(partial[3], input, other)
            else:
                fn = partial[0]()
                fn.needs_input_grad = _NEEDS_A
                fn._saved_versions = _saved_versions(partial[1], input, other)
        else:
            fn = cls()
            fn.needs_input_grad = _NEEDS_AB
            if save_both:
                ca = input._version_counter
                cb = other._version_counter
                fn._saved_versions = (ca, ca[0], 0, cb, cb[0], 1)
            elif save_one is None:
                fn._saved_versions = None
            else:
                counter = (input if save_one == 0 else other)._version_counter
                fn._saved_versions = (counter, counter[0], save_one)
        out = fn.forward(x, y)
        fn._freed = False
        fn._pre_hooks = None
        fn._edges = (ea, eb)
        fn._out_meta = None
        if _saved_hooks:  # saved-tensor hooks are active (saved_hooks.py)
            pack_node(fn)
        if type(out) is not _ndarray:  # one test for the common case (a NumPy array)
            if type(out) is tuple:
                return _link_outputs(fn, out)
            if isinstance(out, _np_generic):
                out = _np_asarray(out)
        shape = out.shape
        try:  # free when nothing is raised
            fn._out_shape = _SHAPES[shape]
        except KeyError:
            fn._out_shape = _interned_shape(shape)
        t = _new_tensor(Tensor)
        t.array = out
        t.requires_grad = True
        t.grad = None
        t.grad_fn = fn
        t._output_nr = 0
        t._version_counter = [0]
        t._hooks = None
        t._post_hooks = None
        t._spec = None
        if save_output:
            _record_output_versions(fn, (t,))
        return t

    operator.__qualname__ = operator.__name__ = f"{cls.__name__.lower()}_operator"
    return operator


def apply_binary(cls, a: Tensor, b: Tensor):
    """``cls.apply(a, b)`` for two Tensors and no keyword parameters, through
    :func:`binary_operator` (made once per class) when their dtypes and devices agree."""
    try:
        op = _APPLY_BINARY[cls]
    except KeyError:
        op = _APPLY_BINARY[cls] = binary_operator(cls, cls.apply)
    return op(a, b)


_APPLY_BINARY: dict = {}


def input_shape(fn: Function, i: int) -> tuple:
    """The shape of ``fn``'s input ``i``, which needs a gradient, from its graph edge (what
    the engine checks gradients against): a node that keeps no copy of it. A shape tuple kept
    per node is one more object per op for the cyclic garbage collector (``h * c``: ~2,400
    instructions of a 16-element op's forward and backward)."""
    edge = fn._edges[i]
    if type(edge) is tuple:  # output k >= 1 of a several-output node
        return edge[0]._out_meta[edge[1]][0]
    if isinstance(edge, Function):
        return edge._out_shape if edge._out_meta is None else edge._out_meta[0][0]
    return edge.array.shape  # a leaf


def _saved_versions(plan: tuple, a: Tensor, b: Tensor):
    """``_saved_versions`` of a two-input node that saves what ``plan`` (:func:`_binary_plan`)
    says, of the inputs ``a`` and ``b``."""
    both, one, _ = plan
    if both:
        return (a._version_counter, a._version_counter[0], 0, b._version_counter, b._version_counter[0], 1)
    if one is None:
        return None
    counter = (a if one == 0 else b)._version_counter
    return (counter, counter[0], one)


def _binary_plan(cls) -> tuple:
    """What a two-input node of ``cls`` saves: (both inputs, the one input index or None,
    the output), from the class's declarations (``save_inputs`` None means all)."""
    saved = {0, 1} if cls.save_inputs is None else set(cls.save_inputs)
    both = saved >= {0, 1}
    one = None if both or not saved else min(saved)
    return both, one, bool(cls.save_output)


def _interned_shape(shape: tuple) -> tuple:
    """``shape`` as the one tuple ``_SHAPES`` holds for it (added on first sight)."""
    if len(_SHAPES) >= _MAX_SHAPES:
        _SHAPES.clear()
    return _SHAPES.setdefault(shape, shape)


class AccumulateGrad:
    """The node PyTorch shows for a leaf in ``next_functions``: shardflow's edges point at the
    leaf Tensor itself, so this is a view made on request (``variable`` is the leaf; two
    requests give two views of one leaf)."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor):
        self.variable = variable

    next_functions = ()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __eq__(self, other) -> bool:
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"  # torch's form


class ViewNode:
    """A node torch has and shardflow folds into the op that uses it (linear's
    ``weight.t()``, ``TBackward0``), shown in ``next_functions`` so that a walk over them
    meets torch's nodes in torch's order; display only (it is no place for
    ``autograd.grad(inputs=GradientEdge(...))``). ``next_functions`` is the one edge it
    views."""

    __slots__ = ("_name", "next_functions")

    def __init__(self, name: str, edge: tuple):
        self._name = name
        self.next_functions = (edge,)

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {id(self):#x}>"


def edge_of(t: Tensor):
    """The packed graph edge (module docstring) to the producer of ``t``, which requires
    grad: the leaf itself, its producer for output 0, else ``(producer, output_nr)``.
    ``apply`` builds the same inline (the per-op path)."""
    producer = t.grad_fn
    if producer is None:
        return t
    return producer if t._output_nr == 0 else (producer, t._output_nr)


def _edge_pair(edge):
    """A packed edge (``Function._edges``) as the pair ``(node, output number)`` (or None)."""
    if edge is None or type(edge) is tuple:
        return edge
    return (edge, 0)


# needs_input_grad of a two-input node whose inputs need a gradient: b only, a only, both
_NEEDS_B = (False, True)
_NEEDS_A = (True, False)
_NEEDS_AB = (True, True)


def _link_outputs(fn: Function, out: tuple) -> tuple:
    """The output Tensors of a node whose forward returned several arrays (floating and
    complex outputs are differentiable; integer and bool outputs never are)."""
    fn._out_meta = [(o.shape, o.dtype) for o in out]
    outs = tuple(
        _wrap(o, o.dtype.kind in "fcV", fn, i) for i, o in enumerate(out)
    )
    if type(fn).save_output:
        _record_output_versions(fn, outs)
    return outs


def _record_output_versions(fn: Function, outs) -> None:
    """Add the outputs' version counters (index -1 - output number) to the saved ones."""
    extra = ()
    for k, t in enumerate(outs):
        extra += (t._version_counter, t._version_counter[0], -1 - k)
    fn._saved_versions = extra if fn._saved_versions is None else fn._saved_versions + extra


def _apply_on_one_device(cls, args, params):
    """``cls.apply`` when the tensor arguments are on two devices (see _same_device_arrays)."""
    arrays = _same_device_arrays(cls, args)
    return cls.apply(*[_wrap(x) if isinstance(t, Tensor) and x is not t.array else t
                       for t, x in zip(args, arrays)], **params)


def _same_device_arrays(cls, args) -> list:
    """The arrays of ``args`` when their tensors are on two devices: a 0-d CPU tensor that
    needs no gradient is a number to PyTorch and moves to the others' device; anything else
    raises PyTorch's error, naming the op and the fix."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    devices = {}
    for t in tensors:
        devices.setdefault(str(device_of(t.array)), t)
    main = next((d for d in devices if d != "cpu"), "cpu")
    arrays = []
    for a in args:
        if not isinstance(a, Tensor):
            arrays.append(a)
            continue
        dev = device_of(a.array)
        if str(dev) == main:
            arrays.append(a.array)
        elif dev.type == "cpu" and a.array.ndim == 0 and not a.requires_grad:
            arrays.append(to_device(a.array, device_of(devices[main].array)))
        else:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{main} and {dev}! (in {cls.__name__}); move them to one device with "
                f".to({main!r}) before the op"
            )
    return arrays


# torch.autograd.function's public names for custom Functions (custom_function.py)
from .custom_function import (  # noqa: E402,F401
    BackwardCFunction,
    FunctionCtx,
    InplaceFunction,
    once_differentiable,
)
