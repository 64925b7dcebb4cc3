"""``torch.distributed.nn.functional``: collectives that autograd differentiates.

Unlike ``dist.all_reduce`` (in place, no graph), these return new tensors and record a
backward, as PyTorch's do. Ranks are global ranks (``src``/``dst``), groups are ``dist``
groups (default: the world); every rank of the group must run the backward too (SPMD).

=======================  ==========================================  =================================
function                 forward                                      backward (of the gradient)
=======================  ==========================================  =================================
``all_reduce``           all-reduce (``op``)                          all-reduce with the same ``op``
                                                                      (``SUM``/``AVG``; other ops raise)
``all_gather``           all-gather: one tensor per rank             reduce-scatter (sum)
``broadcast``            broadcast from ``src``                       sum onto ``src``, zero elsewhere
``reduce``               sum onto ``dst`` (others keep their input)   broadcast from ``dst``
``reduce_scatter``       reduce-scatter of ``input_list``            all-gather
``all_to_all``           all-to-all of equal-shaped tensors          all-to-all back
``all_to_all_single``    all-to-all of equal dim-0 chunks            all-to-all back
``gather``               one tensor per rank on ``dst``               scatter from ``dst``
``scatter``              ``tensors[i]`` of ``src`` to rank i           gather onto ``src``
=======================  ==========================================  =================================

The communication is ``dist``'s (``shardflow.distributed``): the same engines, timeouts and
failure reports. PyTorch marks several of these deprecated in favour of functional
collectives (with a ``FutureWarning``); shardflow does not warn.
"""

from __future__ import annotations

from ... import distributed as dist
from ...autograd import Function, Tensor
from ...backend.xp import get_array_module
from ...comm import ReduceOp

__all__ = [
    "all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "all_to_all",
    "all_to_all_single", "gather", "scatter", "ReduceOp",
]


def _comm(group):
    return dist._group(group)


def _copy(a):
    return get_array_module(a).array(a, copy=True)


def _to_group_rank(g, rank: int) -> int:
    return dist._group_rank(g, int(rank))


class _AllReduce(Function):
    save_inputs = ()

    def forward(self, x, *, op, group):
        self.g, self.op = group, ReduceOp.parse(op)
        out = _copy(x)
        group.all_reduce(out, self.op)
        return out

    def backward(self, grad):
        if self.op not in (ReduceOp.SUM, ReduceOp.AVG):
            raise NotImplementedError(
                f"the gradient of all_reduce with op {self.op!r} is not defined here; only "
                "ReduceOp.SUM and ReduceOp.AVG all-reduces are differentiable"
            )
        out = _copy(grad)
        self.g.all_reduce(out, self.op)
        return out


def _reduce_scatter_rows(g, stacked):
    """Row ``g.rank`` of the sum over ranks of ``stacked`` (``(size, *shape)``)."""
    out = get_array_module(stacked).empty((1, *stacked.shape[1:]), dtype=stacked.dtype)
    g.reduce_scatter(stacked, ReduceOp.SUM, out=out)
    return out[0]


class _AllGather(Function):
    save_inputs = ()

    def forward(self, x, *, group):
        self.g = group
        xp = get_array_module(x)
        out = xp.empty((group.size, *x.shape), dtype=x.dtype)
        group.all_gather(xp.ascontiguousarray(x), out=out)
        return tuple(out[i].copy() for i in range(group.size))

    def backward(self, *grads):
        xp = get_array_module(grads[0])
        return _reduce_scatter_rows(self.g, xp.ascontiguousarray(xp.stack(grads)))


class _Broadcast(Function):
    save_inputs = ()

    def forward(self, x, *, src, group):
        self.g, self.src = group, src
        out = _copy(x)
        group.broadcast(out, src)
        return out

    def backward(self, grad):
        out = _copy(grad)
        self.g.all_reduce(out, ReduceOp.SUM)
        if self.g.rank != self.src:
            out[...] = 0
        return out


class _Reduce(Function):
    save_inputs = ()

    def forward(self, x, *, dst, op, group):
        self.g, self.dst = group, dst
        out = _copy(x)
        group.all_reduce(out, ReduceOp.parse(op))
        return out if group.rank == dst else _copy(x)

    def backward(self, grad):
        out = _copy(grad)
        self.g.broadcast(out, self.dst)
        return out


class _ReduceScatter(Function):
    save_inputs = ()

    def forward(self, *inputs, op, group):
        self.g = group
        xp = get_array_module(inputs[0])
        stacked = xp.ascontiguousarray(xp.stack(inputs))
        out = xp.empty((1, *inputs[0].shape), dtype=inputs[0].dtype)
        group.reduce_scatter(stacked, ReduceOp.parse(op), out=out)
        return out[0]

    def backward(self, grad):
        xp = get_array_module(grad)
        out = xp.empty((self.g.size, *grad.shape), dtype=grad.dtype)
        self.g.all_gather(xp.ascontiguousarray(grad), out=out)
        return tuple(out[i].copy() for i in range(self.g.size))


def _all_to_all_rows(g, stacked):
    out = get_array_module(stacked).empty_like(stacked)
    g.all_to_all(stacked, out=out)
    return out


class _AllToAll(Function):
    save_inputs = ()

    def forward(self, *inputs, group):
        self.g = group
        xp = get_array_module(inputs[0])
        out = _all_to_all_rows(group, xp.ascontiguousarray(xp.stack(inputs)))
        return tuple(out[i].copy() for i in range(group.size))

    def backward(self, *grads):
        xp = get_array_module(grads[0])
        out = _all_to_all_rows(self.g, xp.ascontiguousarray(xp.stack(grads)))
        return tuple(out[i].copy() for i in range(self.g.size))


class _AllToAllSingle(Function):
    save_inputs = ()

    def forward(self, x, *, group):
        self.g = group
        xp = get_array_module(x)
        out = xp.empty_like(x)
        group.all_to_all(xp.ascontiguousarray(x), out=out)
        return out

    def backward(self, grad):
        xp = get_array_module(grad)
        out = xp.empty_like(grad)
        self.g.all_to_all(xp.ascontiguousarray(grad), out=out)
        return out


class _Gather(Function):
    save_inputs = ()

    def forward(self, x, *, dst, group):
        self.g, self.dst = group, dst
        xp = get_array_module(x)
        out = xp.empty((group.size, *x.shape), dtype=x.dtype)
        group.all_gather(xp.ascontiguousarray(x), out=out)
        if group.rank != dst:
            out[...] = 0  # PyTorch: only the destination receives; others get zeros
        return tuple(out[i].copy() for i in range(group.size))

    def backward(self, *grads):
        xp = get_array_module(grads[0])
        stacked = xp.ascontiguousarray(xp.stack(grads))
        self.g.broadcast(stacked, self.dst)
        return stacked[self.g.rank].copy()


class _Scatter(Function):
    save_inputs = ()

    def forward(self, *tensors, src, group):
        self.g, self.src = group, src
        xp = get_array_module(tensors[0])
        stacked = xp.ascontiguousarray(xp.stack(tensors))
        group.broadcast(stacked, src)
        return stacked[group.rank].copy()

    def backward(self, grad):
        xp = get_array_module(grad)
        out = xp.empty((self.g.size, *grad.shape), dtype=grad.dtype)
        self.g.all_gather(xp.ascontiguousarray(grad), out=out)
        if self.g.rank != self.src:
            out[...] = 0
        return tuple(out[i].copy() for i in range(self.g.size))


def _check(t, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a shardflow Tensor, got {type(t).__name__}")
    if t._spec is not None:
        raise TypeError(f"{name} is a global tensor (DTensor); these collectives take local "
                        "tensors (use to_local(), or redistribute the global tensor)")
    return t


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """A new tensor: ``tensor`` all-reduced over ``group``; its gradient is all-reduced too."""
    return _AllReduce.apply(_check(tensor), op=op, group=_comm(group))


def all_gather(tensor, group=None) -> tuple:
    """A tuple of every rank's ``tensor`` (same shape on every rank)."""
    return _AllGather.apply(_check(tensor), group=_comm(group))


def broadcast(tensor, src, group=None):
    """A new tensor holding ``src``'s ``tensor`` on every rank."""
    g = _comm(group)
    return _Broadcast.apply(_check(tensor), src=_to_group_rank(g, src), group=g)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None):
    """The reduction of ``tensor`` over ``group`` on ``dst`` (other ranks: a copy of their
    input). Differentiable for ``SUM``."""
    g = _comm(group)
    return _Reduce.apply(_check(tensor), dst=_to_group_rank(g, dst), op=op, group=g)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None):
    """``output`` (written and returned) receives the reduction of every rank's
    ``input_list[this rank]``; the result carries the graph."""
    g = _comm(group)
    if len(input_list) != g.size:
        raise ValueError(f"reduce_scatter needs {g.size} input tensors (one per rank), got "
                         f"{len(input_list)}")
    out = _ReduceScatter.apply(*[_check(t, "input_list[i]") for t in input_list], op=op, group=g)
    _check(output, "output").array[...] = out.array
    output._bump_version()
    return out


def all_to_all(output_tensor_list, input_tensor_list, group=None) -> tuple:
    """``result[j]`` is rank j's ``input_tensor_list[this rank]`` (equal shapes); the values
    are also written into ``output_tensor_list``."""
    g = _comm(group)
    if len(input_tensor_list) != g.size:
        raise ValueError(f"all_to_all needs {g.size} input tensors (one per rank), got "
                         f"{len(input_tensor_list)}")
    if len({tuple(t.shape) for t in input_tensor_list}) != 1:
        raise NotImplementedError("all_to_all of tensors of different shapes is not supported")
    outs = _AllToAll.apply(*[_check(t, "input_tensor_list[i]") for t in input_tensor_list], group=g)
    for dst, src in zip(output_tensor_list, outs):
        dst.array[...] = src.array
        dst._bump_version()
    return outs


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None):
    """``input``'s dim 0 cut into one equal chunk per rank; chunk j goes to rank j, and the
    result (also written into ``output``) is the chunks received, in rank order."""
    if output_split_sizes is not None or input_split_sizes is not None:
        raise NotImplementedError("all_to_all_single with split sizes is not supported; pass "
                                  "equal splits (dim 0 divisible by the group size)")
    g = _comm(group)
    if input.shape[0] % g.size:
        raise ValueError(f"all_to_all_single: dim 0 of input ({input.shape[0]}) must divide by "
                         f"the group size {g.size}")
    out = _AllToAllSingle.apply(_check(input, "input"), group=g)
    _check(output, "output").array[...] = out.array
    output._bump_version()
    return out


def gather(tensor, dst=0, group=None) -> tuple:
    """On ``dst`` every rank's ``tensor`` (a tuple); zeros on the other ranks."""
    g = _comm(group)
    return _Gather.apply(_check(tensor), dst=_to_group_rank(g, dst), group=g)


def scatter(tensors, src=0, group=None):
    """Rank i receives ``tensors[i]`` of ``src``. Every rank passes a list of the group's size
    of tensors of the output's shape (PyTorch's receivers pass tensors that are ignored)."""
    g = _comm(group)
    if tensors is None or len(tensors) != g.size:
        raise ValueError(f"scatter needs {g.size} tensors (one per rank) on every rank, got "
                         f"{tensors!r}")
    return _Scatter.apply(*[_check(t, "tensors[i]") for t in tensors],
                          src=_to_group_rank(g, src), group=g)

