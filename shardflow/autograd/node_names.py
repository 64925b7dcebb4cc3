"""torch's names for graph nodes: ``grad_fn.name()`` is ``'MulBackward0'``, ``'AddmmBackward0'``...

shardflow's node classes are named after the op (``Mul``, ``Linear``, ``ConvNd``); programs
print ``grad_fn`` or compare ``grad_fn.name()`` with torch's names, so ``Function.name()``
maps the class to torch's node name through :data:`TORCH_NODE_NAMES` (the classes are not
renamed: their names appear in shardflow's own code and docs). A class missing from the
table is named ``<Class>Backward0``, which is torch's name whenever the op names agree
(``Exp``, ``Tanh``, ``Cat``, ``Gather``...).

An entry is a string, or a function of the node for ops whose torch name depends on the call
(``x.sum()`` is ``SumBackward0``, ``x.sum(0)`` ``SumBackward1``; ``linear`` with a bias is
``AddmmBackward0``, without one ``MmBackward0``). Those read what the node records for the
graph (output shape, edges), which outlives backward, or its saved attributes, falling back
to the plain name once backward has freed them. Where one shardflow node stands for several
torch ops (``Reshape`` for view/unsqueeze/flatten, ``Permute`` for t/transpose/permute,
``Index`` for select/slice/index) the name is the most common one; torch's CPU names are
used (``dropout`` is ``MulBackward0`` there). ``max(dim)`` and ``min(dim)`` share one node
that keeps no record of which it was: both are named ``MaxBackward0``.
"""

from __future__ import annotations


def _full_or_dim(base: str):
    """``<base>Backward0`` for a full reduction (0-d result), ``<base>Backward1`` over dims."""
    def name(fn) -> str:
        shape = fn._out_shape
        return f"{base}Backward0" if shape == () else f"{base}Backward1"
    return name


def _linear(fn) -> str:
    edges = fn._edges
    return "AddmmBackward0" if len(edges) > 2 and edges[2] is not None else "MmBackward0"


def _extreme(fn) -> str:
    """max() or min() over all elements: the node keeps its input and kept-dims result."""
    d = fn.__dict__
    a, out = d.get("a"), d.get("outk")
    if a is not None and out is not None and a.size and (out < a.max(axis=d.get("dims"), keepdims=True)).any():
        return "MinBackward1"
    return "MaxBackward1"


def _pool(kind: str):
    def name(fn) -> str:
        # a node with several outputs (return_indices=True) keeps its shapes in _out_meta
        shape = fn._out_shape if fn._out_meta is None else fn._out_meta[0][0]
        n = 2 if shape is None else max(len(shape) - 2, 1)
        return f"{kind}{n}D{'WithIndices' if kind == 'MaxPool' else ''}Backward0"
    return name


def _pointwise_loss(fn) -> str:
    kind = fn.__dict__.get("kind", "mse")
    if kind == "l1":  # torch composes l1_loss: abs, then the reduction
        return {"mean": "MeanBackward0", "sum": "SumBackward0"}.get(fn.__dict__.get("reduction"), "AbsBackward0")
    return {"mse": "MseLossBackward0", "l1": "L1LossBackward0", "smooth_l1": "SmoothL1LossBackward0",
            "huber": "HuberLossBackward0"}.get(kind, "MseLossBackward0")


def _permute(fn) -> str:
    """One swap of two dims reads as ``t()`` (2-d) or ``transpose``; anything else ``permute``."""
    dims = fn.__dict__.get("dims")
    if dims is None:
        return "PermuteBackward0"
    moved = [k for k, d in enumerate(dims) if k != d]
    if len(moved) == 2:
        return "TBackward0" if len(dims) == 2 else "TransposeBackward0"
    return "PermuteBackward0"


def _index(fn) -> str:
    """``x[i]`` selects, ``x[a:b]`` slices, an index array gathers (torch's three nodes);
    ``getitem`` records the finer name (:func:`basic_index_name`) on the node."""
    idx = fn.__dict__.get("idx")
    parts = idx if type(idx) is tuple else (idx,)
    if any(hasattr(p, "dtype") or type(p) is list for p in parts):
        return "IndexBackward0"
    if any(type(p) is slice and p != slice(None) for p in parts):
        return "SliceBackward0"
    return "SelectBackward0"


def basic_index_name(index, idx: tuple, shape: tuple) -> str | None:
    """torch's node name for ``x[index]`` (``idx``: the parsed index, ``shape``: x's), or
    None for advanced indexing. Basic indexing is torch's chain of one op per index, so the
    last op names the result: ``x[0, None]`` is ``UnsqueezeBackward0``, ``x[None, 0]``
    ``SelectBackward0``; inside a tuple torch skips a slice over a whole dim (``x[:, :]`` and
    ``x[...]`` are ``AliasBackward0``), a lone slice is always ``SliceBackward0``."""
    if any(hasattr(p, "dtype") or type(p) is list for p in idx):
        return None
    if type(index) is slice:
        return "SliceBackward0"
    consuming = sum(1 for p in idx if p is not None and p is not Ellipsis)
    name, dim = "AliasBackward0", 0
    for p in idx:
        if p is Ellipsis:
            dim += len(shape) - consuming
        elif p is None:
            name = "UnsqueezeBackward0"
        elif type(p) is slice:
            if dim >= len(shape) or p.indices(shape[dim]) != (0, shape[dim], 1):
                name = "SliceBackward0"
            dim += 1
        elif type(p) is bool:
            return None
        else:
            name, dim = "SelectBackward0", dim + 1
    return name


def _var(fn) -> str:
    return "StdBackward0" if fn.__dict__.get("take_sqrt") else "VarBackward0"


TORCH_NODE_NAMES = {
    "CopySlices": "CopySlices",
    "_CopyFrom": "torch::autograd::CopyBackwards",
    "_Fill": lambda fn: "ZeroBackward0" if fn.__dict__.get("zero") else "FillBackward2",
    "_MedianAll": "MedianBackward0",
    "_NanMedianAll": "NanmedianBackward0",
    "MM": "MmBackward0",
    "BatchedMatMul": "BmmBackward0",
    "Linear": _linear,
    "PowScalar": "PowBackward0",
    "Square": "PowBackward0",
    "Reshape": "ViewBackward0",  # squeeze/unsqueeze/a copying reshape record their names
    "Permute": _permute,
    "Index": _index,
    "Sum": _full_or_dim("Sum"),
    "Mean": _full_or_dim("Mean"),
    "_Extreme": _extreme,
    "_MaxAll": "MaxBackward1",
    "_MinAll": "MinBackward1",
    "_Amax": "AmaxBackward0",
    "_Amin": "AminBackward0",
    "CumSum": "CumsumBackward0",
    "_SelectAlongDim": "MaxBackward0",
    "VectorNorm": "LinalgVectorNormBackward0",
    "PointwiseLoss": _pointwise_loss,
    "CrossEntropyIndex": "NllLossBackward0",
    # torch composes the probability-target form: ``-(t * logp).sum(1)``, then ``/ N`` for 'mean'
    "CrossEntropyProb": lambda fn: "DivBackward1" if fn.__dict__.get("reduction", "mean") == "mean" else "NegBackward0",
    "NllLoss": "NllLossBackward0",
    "LayerNorm": "NativeLayerNormBackward0",
    "BatchNorm": "NativeBatchNormBackward0",
    "FusedDropout": "MulBackward0",
    "ConvNd": "ConvolutionBackward0",
    "MaxPoolNd": _pool("MaxPool"),
    "AvgPoolNd": _pool("AvgPool"),
    "ClampScalar": "ClampBackward1",
    "SplitDim": "SplitBackward0",
    "Var": _var,
    "LogSumExp": "LogsumexpBackward0",
    "BCEWithLogits": "BinaryCrossEntropyWithLogitsBackward0",
    "ToDtype": "ToCopyBackward0",
    # an RNN layer's output: torch's CPU LSTM runs mkldnn's layer (not with a projection),
    # RNN/GRU stack the steps
    "Recurrence": lambda fn: ("MkldnnRnnLayerBackward0" if fn.__dict__.get("mode") == "lstm"
                              and fn.__dict__.get("w_hr") is None else "StackBackward0"),
}


def torch_node_name(fn) -> str:
    """torch's name for the node ``fn`` (module docstring); a Function subclass defined
    outside shardflow (a program's own op) keeps its class name."""
    cls = type(fn)
    cls_name = cls.__name__
    if not cls.__module__.startswith("shardflow."):
        return cls_name
    recorded = getattr(fn, "_torch_name", None)
    if recorded is not None:  # a name, or a basic index's (index, idx, shape) (ops/index.py)
        return recorded if type(recorded) is str else basic_index_name(*recorded) or "IndexBackward0"
    entry = TORCH_NODE_NAMES.get(cls_name) or cls.__dict__.get("torch_name")
    if entry is None:
        return f"{cls_name}Backward0"
    if type(entry) is str:
        return entry
    return entry(fn)
