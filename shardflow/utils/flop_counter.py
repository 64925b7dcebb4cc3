"""``torch.utils.flop_counter``: ``FlopCounterMode`` counts the FLOPs of the matrix products,
convolutions and attention a block of code runs, forward and backward, per module, with
torch's formulas, so a training script's MFU (model FLOPs utilisation) reads the same number
under shardflow as under torch.

How: inside the ``with`` block the counter's hook sits in the op dispatcher's counter slot
(``autograd.dispatch.set_op_counter``) and sees every registered op call; the ops torch
counts are priced with torch's formulas (``flop_formulas.py``) under the aten name torch
records them by (``aten.addmm`` for ``F.linear`` with a bias, ``aten.convolution`` for
``conv2d`` ...). Calls nested inside a counted op are not counted again. The backward FLOPs
of a counted op are priced at the forward call (torch's formulas need only the shapes and
which inputs need a gradient) and added when that node's backward runs inside the block
(a ``grad_fn`` pre-hook), as torch counts the backward ops it sees. The modules a count goes
to are ``ModuleTracker``'s ``parents`` when the op (or its backward) runs, as in torch:
``"Global"``, the outermost module's class name, then attribute paths (``"Net.seq.0"``).

Counted as torch 2.13 counts them (checked against torch's counter on CPU): ``mm``,
``addmm``, ``bmm``, ``baddbmm``, ``matmul`` (as the ``mm`` / ``bmm`` torch lowers it to;
matrix-vector products and dot products are not counted, as in torch), ``F.linear``,
``conv1d/2d/3d``, ``conv_transpose1d/2d/3d`` (bias FLOPs not counted, as in torch) and
two-operand ``einsum`` (as the ``bmm`` torch runs). Deviations, plainly:

* ``scaled_dot_product_attention`` is counted with torch's attention formulas under
  ``aten._scaled_dot_product_efficient_attention`` (``..._flash_attention`` for float16 /
  bfloat16 inputs without a mask), what torch records on a GPU; torch's CPU build counts no
  FLOPs for it (its CPU kernel has no formula). Inputs that are not 4-D are counted with
  their leading dimensions as the batch.
* An input counts as getting a gradient when it requires grad (``autograd.grad`` asking for
  fewer inputs still counts them all).
* The keys of ``get_flop_counts()``'s inner dicts are small objects whose ``str`` is torch's
  (``"aten.mm"``), not torch's ``OpOverloadPacket``; they compare equal to that string.
* ``custom_mapping`` / ``register_flop_formula`` take shardflow's built-in ops
  (``torch.ops.aten.<op>`` or the op's name); their formula prices the forward call (as torch's
  shape-wrapped formulas, ``formula(*shapes, out_shape=...)``); backward FLOPs of such an op are
  counted only for the built-in rules. Operators defined with ``torch.library`` are refused
  (the counter does not see their calls; the built-in ops their kernels run are counted).
* Layers built from several ops are counted as the products shardflow runs for them:
  ``nn.MultiheadAttention`` with ``need_weights=True`` (the default) matches torch; with
  ``need_weights=False`` and in ``nn.TransformerEncoderLayer`` its attention products are
  ``aten.bmm`` here, where torch's CPU build runs an SDPA kernel it counts as 0; ``nn.LSTM`` /
  ``nn.GRU`` count their gate products (torch's CPU LSTM kernel counts 0, its GRU decomposes
  into other products).
* ``shardflow.compile`` / ``compile_step`` run their calls eagerly while a counter is active
  (a replayed graph runs no op through the dispatcher); each such call is logged as eager.
* ``get_table()`` lays the table out itself in ``tabulate``'s ``simple`` format, which torch
  needs the ``tabulate`` package for.
"""

from __future__ import annotations

import warnings
from collections import defaultdict

from ..autograd import dispatch
from ..autograd.tensor import Tensor
from .flop_formulas import RULES, OpKey
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

# op name -> formula(*shapes, out_shape=...) added by register_flop_formula
_REGISTERED: dict[str, object] = {}


def _op_name(target) -> str:
    """The shardflow op name of a ``register_flop_formula`` / ``custom_mapping`` target."""
    if isinstance(target, str):
        return target
    name = getattr(target, "_name", None)  # torch.ops.aten.<op> (shardflow.ops' aten overloads)
    if isinstance(name, str):
        return name
    if getattr(target, "_opdef", None) is not None:  # a torch.library operator
        raise NotImplementedError(
            f"a FLOP formula for {target}: operators defined with torch.library are not seen by shardflow's "
            "counter (it sees the built-in ops' calls); count the built-in ops the operator's kernel runs, which "
            "the counter already does")
    raise ValueError(f"register_flop_formula(targets): expected each target to be a built-in operator "
                     f"(torch.ops.aten.<op>) or an op name, got {target!r} of type {type(target).__name__}")


def _flatten(targets):
    return [t for x in targets for t in _flatten(x)] if isinstance(targets, list | tuple) else [targets]


def register_flop_formula(targets, get_raw=False):
    """Decorator: ``formula(*arg_shapes, out_shape=..., **kwargs) -> int`` prices each call of
    ``targets`` (one op or a list) in every ``FlopCounterMode`` (torch's shape-wrapped form;
    ``get_raw=True`` passes the arguments themselves)."""
    def register_fun(formula):
        wrapped = formula if get_raw else _shape_wrapper(formula)
        for target in _flatten(targets):
            name = _op_name(target)
            if name in _REGISTERED or name in RULES:
                raise RuntimeError(f"duplicate registrations for {target}")
            _REGISTERED[name] = wrapped
        return formula

    return register_fun


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else x


def _shape_wrapper(formula):
    def shaped(*args, out_val=None, **kwargs):
        shapes = [_shape(a) for a in args]
        out_shape = tuple(_shape(o) for o in out_val) if isinstance(out_val, tuple | list) else _shape(out_val)
        return formula(*shapes, out_shape=out_shape, **{k: _shape(v) for k, v in kwargs.items()})

    return shaped


class FlopCounterMode:
    """Count the FLOPs run inside ``with FlopCounterMode() as fc:`` (forward and backward),
    per module; ``fc.get_total_flops()``, ``fc.get_flop_counts()``, ``fc.get_table(depth)``.
    On leaving, the table is printed unless ``display=False``. Not reentrant (as torch's)."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None) -> None:
        self.flop_counts: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self._custom = dict(_REGISTERED)
        for target, formula in (custom_mapping or {}).items():
            self._custom[_op_name(target)] = formula if getattr(formula, "_get_raw", False) else _shape_wrapper(formula)
        self.mod_tracker = ModuleTracker()
        self._active = False
        self._depth_in_op = 0
        self._previous_hook = None

    # ------------------------------------------------------------------ results
    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict]:
        """``{module name: {op: flops}}``, ``"Global"`` holding everything counted."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        """torch's table: one row per module up to ``depth`` levels (and its ops), FLOPs with
        the suffix of the global total, and the percentage of the total."""
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        global_flops = self.get_total_flops()
        suffix = _suffix(global_flops)
        subsumed = False
        rows: list[list[str]] = []

        def module_rows(name, indent):
            nonlocal subsumed
            total = sum(self.flop_counts[name].values())
            subsumed |= total >= global_flops
            pad = " " * indent
            out = [[pad + name, _with_suffix(total, suffix), _percent(total, global_flops)]]
            out += [[pad + " - " + str(k), _with_suffix(v, suffix), _percent(v, global_flops)]
                    for k, v in self.flop_counts[name].items()]
            return out

        for name in sorted(self.flop_counts):
            if name == "Global" or name.count(".") + 1 > depth:
                continue
            rows.extend(module_rows(name, name.count(".")))
        if "Global" in self.flop_counts and not subsumed:
            for row in rows:
                row[0] = " " + row[0]
            rows = module_rows("Global", 0) + rows
        if not rows:
            rows = [["Global", "0", "0%"]]
        return _simple_table(rows, ["Module", "FLOP", "% Total"])

    # ------------------------------------------------------------------ the block
    def __enter__(self):
        if self._active:  # torch fails at the inner exit ("mode is None"); say it at the start
            raise RuntimeError("FlopCounterMode is not reentrant: this counter is already counting; count a "
                               "nested block with a second FlopCounterMode (the outer one counts it too)")
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self._previous_hook = dispatch.set_op_counter(self._hook)
        self._active = True
        return self

    def __exit__(self, *exc):
        self._active = False
        dispatch.set_op_counter(self._previous_hook)
        self._previous_hook = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _call(self, name, func, args, kwargs, nxt):
        """The op, through an enclosing counter's hook first (nested counters all count, as
        nested torch modes do)."""
        if self._previous_hook is not None:
            return self._previous_hook(name, func, args, kwargs, nxt=nxt)
        return nxt(name, func, args, kwargs)

    def _hook(self, name, func, args, kwargs, nxt):
        rule = RULES.get(name)
        custom = self._custom.get(name)
        if self._depth_in_op or (rule is None and custom is None):
            return self._call(name, func, args, kwargs, nxt)
        self._depth_in_op += 1
        try:
            out = self._call(name, func, args, kwargs, nxt)
        finally:
            self._depth_in_op -= 1
        parents = set(self.mod_tracker.parents)
        if custom is not None:
            self._add(parents, OpKey(f"aten.{name}"), custom(*args, **kwargs, out_val=out))
            return out
        counted = rule(args, kwargs, out)
        if counted is None:
            return out
        (key, flops), backward = counted
        if key is not None:
            self._add(parents, key, flops)
        fn = out.grad_fn if isinstance(out, Tensor) else None
        if backward and fn is not None:
            fn.register_prehook(self._backward_hook(backward))
        return out

    def _backward_hook(self, backward):
        def hook(grad_outputs):
            if self._active:  # torch counts the backward ops only while the mode is on
                parents = set(self.mod_tracker.parents)  # the modules whose backward is running
                for key, flops in backward:
                    self._add(parents, key, flops)

        return hook

    def _add(self, parents, key, flops) -> None:
        for par in parents:
            self.flop_counts[par][key] += flops


# ---------------------------------------------------------------------- the table (torch's)
_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number: int) -> str:
    # 1.01B is shown as 1001M, not 1.001B (torch's rule)
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number: int, suffix: str) -> str:
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}" + suffix


def _percent(num, denom) -> str:
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _number(cell: str):
    try:
        return float(cell)
    except ValueError:
        return None


def _simple_table(rows, headers) -> str:
    """tabulate's ``simple`` layout with torch's settings (first column left-aligned, the
    others right-aligned), as tabulate 0.10 prints it: cells stripped (torch's
    ``tabulate.PRESERVE_WHITESPACE`` no longer reaches it, so the indentation torch adds per
    depth is not shown), and a column whose cells are all numbers formatted as ``"g"``
    (``"480.000"`` as ``480``)."""
    columns = [tuple(c.strip() for c in col) for col in zip(*rows, strict=True)]
    for j in range(1, len(headers)):
        if all(_number(c) is not None for c in columns[j]):
            columns[j] = tuple(format(_number(c), "g") for c in columns[j])
    rows = [list(r) for r in zip(*columns, strict=True)]
    widths = [max([len(h) + 2, *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])
