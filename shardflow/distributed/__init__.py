"""``shardflow.distributed``: torch.distributed's names on shardflow Tensors (layer L6).

A torch.distributed script runs with ``import shardflow.distributed as dist``:
``init_process_group`` detects how the process was launched (mpiexec / ``shardflow run``,
Slurm, or nothing = world of one; torchrun-style variables are recognised) and accepts the
``backend`` argument (``"gloo"`` and ``"mpi"`` map to MPI on CPU; ``get_backend()`` reports the
name asked for: ``backend_names.py``). The collectives work in
place on ``Tensor.array`` through :mod:`shardflow.comm`, bump the tensor's version counter,
and with ``async_op=True`` return a :class:`Work` whose ``wait()`` completes them. Ranks
given to ``src``/``dst`` are global ranks, as in PyTorch, also for sub-groups.

Global tensors (placement + sbp) will live in this package as well.
"""

from __future__ import annotations

import pickle
import warnings
from datetime import timedelta

import numpy as np

from .. import accelerator
from .. import comm as _comm
from ..autograd.tensor import Tensor
from ..backend.xp import cuda_is_available, get_array_module
from ..comm import CommError, CommTimeoutError, Communicator, ReduceOp
from ..comm import Work as _CommWork
from . import errors as _errors
from .backend_names import Backend, engine_backend, get_default_backend_for_device

__all__ = [
    "ReduceOp", "Work", "ProcessGroup", "GroupMember", "init_process_group",
    "destroy_process_group", "is_initialized", "is_available", "get_rank", "get_world_size",
    "get_local_rank", "get_backend", "new_group", "all_reduce", "broadcast", "all_gather",
    "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all_single",
    "barrier", "send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv", "all_gather_object",
    "broadcast_object_list", "CommError", "CommTimeoutError", "Backend", "group",
    "get_default_backend_for_device", "is_gloo_available", "is_nccl_available", "is_mpi_available",
    "is_backend_available", "get_process_group_ranks", "get_global_rank", "get_group_rank",
    "get_node_local_rank", "reduce", "gather", "scatter", "all_to_all", "gather_object",
    "scatter_object_list", "monitored_barrier", "default_pg_timeout",
]

ProcessGroup = Communicator


class _WorldMeta(type):
    """``WORLD`` as PyTorch's: the default process group once ``init_process_group`` ran (so
    ``dist.group.WORLD.size()`` and ``group=dist.group.WORLD`` work), None before."""

    @property
    def WORLD(cls):  # noqa: N802 - PyTorch's name
        return _comm.get_world() if _comm.is_initialized() else None


class GroupMember(metaclass=_WorldMeta):
    NON_GROUP_MEMBER = object()


class group(metaclass=_WorldMeta):  # noqa: N801 - PyTorch's name (``dist.group.WORLD``)
    pass


default_pg_timeout = timedelta(minutes=30)  # PyTorch's value; see init_process_group

# The backend name init_process_group was given (what get_backend reports), None if none.
_asked_backend: list[str | None] = [None]


class Work:
    """torch.distributed's Work: ``wait()`` completes the operation and returns True."""

    __slots__ = ("_inner", "_post", "_done", "_any_source", "_timeout", "_tensors")

    def __init__(self, inner: _CommWork, post=None, any_source: bool = False,
                 timeout: float | None = None, tensors=None):
        self._inner = inner
        self._post = post
        self._done = False
        self._any_source = any_source  # an irecv from any rank: its result is the sender
        self._timeout = timeout  # the call's own timeout= (barrier), seconds; None: the group's
        self._tensors = tensors  # what get_future() gives: the operation's result tensors

    def wait(self, timeout=None) -> bool:
        """Complete the operation. ``timeout`` (a ``timedelta`` or seconds, torch's type)
        bounds this wait instead of the group's timeout; when it passes the job ends with the
        timeout report (deviation: torch raises a RuntimeError the rank could catch)."""
        if not self._done:
            if hasattr(timeout, "total_seconds"):  # torch's type: was a TypeError
                timeout = timeout.total_seconds()
            self._inner.wait(self._timeout if timeout is None else timeout)
            self._done = True
            if self._post is not None:
                self._post()
        return True

    def is_completed(self) -> bool:
        if not self._done and self._inner.is_completed():
            self.wait()
        return self._done

    def result(self):
        return self._inner.result()

    def get_future(self):
        """A future completed by ``wait()`` whose value is the list of the operation's result
        tensors (``[tensor]`` for ``all_reduce`` / ``broadcast``, ``[output]`` for the
        ``*_into_tensor`` / ``*_tensor`` / ``*_single`` forms), as torch's; the DDP
        communication-hook idiom ``dist.all_reduce(t, async_op=True).get_future().then(lambda
        fut: fut.value()[0])`` works."""
        from .algorithms.ddp_comm_hooks.future import Future

        return Future(lambda: (self.wait(), list(self._tensors or []))[1])

    def _source_rank(self) -> int:
        """The sender's group rank of an ``irecv`` from any rank (torch's name), after waiting."""
        if not self._any_source:
            raise RuntimeError("_source_rank() is only available on the Work of an irecv "
                               "without src (from any rank)")
        self.wait()
        return int(self._inner.result())


def is_available() -> bool:
    return True


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout=None, world_size: int = -1, rank: int = -1, store=None,
                       group_name: str = "", pg_options=None, device_id=None) -> None:
    """Initialise the default group from the launch environment (see the module docstring).

    ``world_size`` / ``rank``, when given, are checked against what the launcher set; with
    backend ``"mpi"`` they are ignored with torch's warning (MPI assigns them: PyTorch's
    distributed tutorial runs ``init_process_group("mpi", rank=0, world_size=0)`` under
    ``mpirun``).
    ``timeout`` (a ``timedelta`` or seconds), as torch's: a collective or point-to-point call
    of this group that waits longer ends the job with a report naming the ranks that did not
    arrive and what each called; without it, ``SHARDFLOW_COMM_TIMEOUT`` (default 600 s). It
    bounds the start of the world too: a rank that does not reach ``init_process_group``
    within it (a straggler) ends the job with a report naming it, as torch's rendezvous
    fails after ``timeout``.
    """
    if _comm.is_initialized():
        raise ValueError(  # torch's type and words; the fix follows
            "trying to initialize the default process group twice! (call "
            "destroy_process_group() first, or check dist.is_initialized())"
        )
    _check_init_method(init_method)
    _check_device_id(device_id)
    asked = None if backend is None else str(Backend(backend))
    if asked == "mpi" and (world_size != -1 or rank != -1):
        warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are ignored "
                      "since they are assigned by the MPI runtime.", stacklevel=2)
        world_size = rank = -1  # (torch's MPI tutorial passes world_size=0)
    if world_size is not None and world_size != -1 and world_size < 1:
        raise ValueError(f"init_process_group(world_size={world_size}): the world size must be "
                         "a positive number of processes; leave it out (the launcher knows it), "
                         "or start N ranks with `shardflow run -n N`")
    if _comm.world_info().launcher == "none":  # a world of one: checked before it is made
        _check_size_and_rank(world_size, rank, 1, 0)
    seconds = _timeout_seconds(timeout, "init_process_group")  # checked before the world starts
    world = _comm.init(engine_backend(asked, ":" in (asked or "") and cuda_is_available()),
                       init_timeout=seconds)  # a straggler's wait is bounded by it too
    _check_size_and_rank(world_size, rank, world.size, world.rank)
    _set_timeout(world, timeout, "init_process_group")
    _asked_backend[0] = asked
    _errors._count_group()


def _check_device_id(device_id) -> None:
    """torch's ValueError for a ``device_id`` of an accelerator this process does not have
    (``device_id=torch.device("cuda", local_rank)`` on a CPU-only machine; it was ignored),
    before anything starts. A CPU device or None passes."""
    if device_id is None:
        return
    kind = getattr(device_id, "type", None) or str(device_id).split(":")[0]
    if kind == "cuda" and not cuda_is_available():
        raise ValueError(
            f"device_id {device_id} does not match the current compilation's accelerator "
            "support: None. Please use a different compiled version that supports your "
            "accelerator. (init_process_group: no CUDA device is visible to this process; "
            "leave device_id out to run on the CPU)")


def _check_size_and_rank(world_size, rank, size: int, me: int) -> None:
    """``init_process_group``'s ``world_size`` / ``rank`` against the launcher's (``size``
    ranks, this one ``me``): a ValueError naming both and the fix. In a world of one (plain
    ``python``) this runs before the world is made, so the caller can catch it and init again."""
    if world_size not in (-1, None) and world_size != size:
        raise ValueError(
            f"init_process_group(world_size={world_size}) but the launcher started "
            f"{size} rank(s); launch with `shardflow run -n {world_size} ...`, or start "
            f"the processes with shardflow.multiprocessing.spawn(fn, args, nprocs={world_size}) "
            "with join=True and plain-data args (it launches them as one MPI job); processes "
            "started one by one (multiprocessing.Process) cannot form one process group: run "
            "the function on each rank of `shardflow run` instead (rank and world size from "
            "the RANK and WORLD_SIZE variables it sets)"
        )
    if rank not in (-1, None) and rank != me:
        why = (f"rank {rank} is another process's rank" if 0 <= rank < size else
               f"rank {rank} is not in 0 .. {size - 1}")
        raise ValueError(
            f"init_process_group(rank={rank}) but this process is rank {me} of "
            f"{size}: {why}. The launcher assigns the ranks: pass the one it gave (under "
            "mp.spawn the first argument of your function; under `shardflow run` or torchrun "
            "int(os.environ['RANK'])), or leave rank out")


def _check_init_method(init_method) -> None:
    """torch's URL schemes (``env://``, ``tcp://host:port``, ``file:///path``) are accepted:
    the ranks find each other through the launcher, whichever is given. Any other raises
    torch's RuntimeError before anything starts (it was accepted silently)."""
    if init_method is None:
        return
    text = str(init_method)
    scheme = text.split("://", 1)[0] if "://" in text else text
    if scheme not in ("env", "tcp", "file"):
        raise RuntimeError(
            f"No rendezvous handler for {scheme}:// (init_process_group(init_method={text!r}): "
            "pass env://, tcp://HOST:PORT or file:///PATH, or leave it out; under `shardflow "
            "run -n N` the ranks find each other through the launcher with any of them)")


def destroy_process_group(group=None) -> None:
    """Destroy ``group`` (default: the world). A rank outside ``group`` (``new_group`` gave it
    ``GroupMember.NON_GROUP_MEMBER``) has nothing to destroy: a no-op, as torch. A destroyed
    group is marked (``Communicator.destroyed``): destroying it again, or any later call on
    it, raises torch's ValueError ("Invalid process group specified" / "... is not
    registered ...") naming the fix. (A collective on a destroyed group used to crash the
    rank with a segmentation fault: its MPI window and communicators were freed.) Without a
    default group, ``destroy_process_group()`` raises torch's AssertionError."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if getattr(group, "destroyed", False):
        raise ValueError("Invalid process group specified (destroy_process_group: this group "
                         "was already destroyed; destroy each group once)")
    if group is None and not _comm.is_initialized():
        # torch's type and words; shardflow used to make a world here only to free it (a
        # collective: one rank destroying twice waited for the others)
        raise AssertionError(
            "Process group cannot be None (destroy_process_group(): no default process group "
            "is initialized: it was never initialized or is destroyed already; check "
            "dist.is_initialized() first)")
    if group is None or group is _comm.get_world():
        world = _comm.get_world()
        _comm.destroy()
        world.destroyed = True
        _asked_backend[0] = None
        _errors._count_group(reset=True)
    else:
        group.free()
        group.destroyed = True


def is_initialized() -> bool:
    return _comm.is_initialized()


# PyTorch's words (torch 2.13 raises ValueError with them); the fix follows
NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call "
    "init_process_group."
)


def _group(group, op: str | None = None) -> Communicator | None:
    """The communicator of ``group`` (None: the world), checked.

    A rank outside ``group`` (``new_group`` gave it ``GroupMember.NON_GROUP_MEMBER``): a
    collective ``op`` does nothing there, with torch's UserWarning "Running all_reduce on
    global rank 1 which does not belong to the given group." and returns None (the caller
    returns at once); without ``op`` (a query that needs the group's ranks) it raises a
    ValueError naming the fix. A destroyed group raises torch's ValueError."""
    if group is None or group is GroupMember.WORLD:
        if not _comm.is_initialized():
            raise ValueError(
                f"{NOT_INITIALIZED} (Code that runs with or without a process group can "
                "check dist.is_initialized() first, or ask shardflow.comm.world_info(), which "
                "never initialises anything.)"
            )
        return _comm.get_world()
    if group is GroupMember.NON_GROUP_MEMBER:
        me = _comm.get_world().rank if _comm.is_initialized() else -1
        if op is not None:  # torch's words and category
            warnings.warn(f"Running {op} on global rank {me} which does not belong to the given "
                          "group.", UserWarning, stacklevel=3)
            return None
        raise ValueError(
            f"Global rank {me} is not part of the group: new_group(ranks) returned "
            "GroupMember.NON_GROUP_MEMBER on this rank. Check dist.get_rank(group) >= 0 (it is "
            "-1 outside the group) before using the group")
    if isinstance(group, (int, float, str, list, tuple, dict, set)):
        # not a group at all (a rank, a list of ranks, a name): torch's ValueError and words
        # (it failed later with an AttributeError "'int' object has no attribute ...")
        raise ValueError(
            f"Process group {group!r} is not initialized in the world group map. Please "
            "initialize the group first. (group= takes a process group: make one with "
            "dist.new_group(ranks), or pass None for the default group)")
    # (``True`` once destroyed; a fork child's copies say "forked" and raise their own
    # CommError at a collective, while queries such as get_rank(group) still answer there)
    if getattr(group, "destroyed", False) is True:
        raise ValueError(
            f"Group {group!r} is not registered, please create group with "
            "torch.distributed.new_group API (destroy_process_group destroyed it; make a new "
            "one with dist.new_group(ranks), or call destroy_process_group after its last use)")
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default: the world), -1 on a rank outside ``group``
    (torch's answer); raises before init_process_group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return int(_group(group).rank)


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (default: the world), -1 on a rank outside ``group``
    (torch's answer); raises before init_process_group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return int(_group(group).size)


def get_local_rank() -> int:
    """The rank on this host (shardflow's addition); raises before init_process_group."""
    _group(None)
    return _comm.world_info().local_rank


def get_backend(group=None) -> str:
    """The backend name ``init_process_group`` was given (``"gloo"``, ``"nccl"``, ...), for the
    world and its sub-groups; the engine's name when none was given (``backend_names.py``)."""
    if group is GroupMember.NON_GROUP_MEMBER:  # torch's type and words
        raise ValueError("Invalid process group specified (get_backend: this rank is not in the "
                         "group; check dist.get_rank(group) >= 0 first)")
    g = _group(group)
    return _asked_backend[0] if _asked_backend[0] is not None else g.backend


def is_gloo_available() -> bool:
    """True: ``"gloo"`` is accepted (it runs on MPI)."""
    return True


def is_mpi_available() -> bool:
    return True


def is_nccl_available() -> bool:
    """True when NCCL can run: CuPy sees a CUDA device."""
    return cuda_is_available()


def is_backend_available(backend: str) -> bool:
    name = str(backend).lower()
    if name == "nccl":
        return is_nccl_available()
    return name in ("gloo", "mpi")


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``, in group-rank order."""
    g = _group(group)
    ranks = getattr(g, "world_ranks", None)
    return list(range(g.size)) if ranks is None else list(ranks)


def get_global_rank(group, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"group rank {group_rank} is not in this group of {len(ranks)} ranks")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    return _group_rank(_group(group), global_rank)


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """The rank on this host (as ``get_local_rank``); ``fallback_rank`` when no launcher set it."""
    info = _comm.world_info()
    if info.launcher == "none" and fallback_rank is not None:
        return int(fallback_rank)
    return info.local_rank


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks: bool = True):
    """A group over ``ranks`` (global ranks); every rank of the world must call it. Group
    ranks follow the sorted global ranks (torch's ``sort_ranks=True``; ``False`` with ranks
    out of order is refused: the engines order groups by global rank). ``group_desc`` and
    ``device_id`` are accepted (a label; the device is the rank's own)."""
    world = _group(None)
    ranks = list(range(world.size)) if ranks is None else list(ranks)
    if len(set(ranks)) != len(ranks):  # torch's words, before any collective
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    for r in ranks:  # torch's words, on every rank before the collective (it was comm's words)
        if not 0 <= r < world.size:
            raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to {world.size - 1} "
                             f"(world_size={world.size}); new_group(ranks={ranks}) takes global "
                             "ranks of the world: pass ranks in 0 .. dist.get_world_size() - 1"
                             + (f", or launch more ranks (shardflow run -n {max(ranks) + 1})"
                                if r >= world.size else ""))
    _timeout_seconds(timeout, "new_group")  # a bad timeout= before the group is made
    if not sort_ranks and ranks != sorted(ranks):
        raise NotImplementedError(
            f"new_group(sort_ranks=False) with ranks out of order ({ranks}): shardflow's groups "
            "number their members by global rank; pass the ranks sorted, or sort_ranks=True")
    sub = world.new_group(ranks)
    _errors._count_group()
    if sub is not None:
        _set_timeout(sub, timeout, "new_group")
    return GroupMember.NON_GROUP_MEMBER if sub is None else sub


def _timeout_seconds(timeout, fn: str) -> float | None:
    """``timeout=`` (a ``timedelta`` or seconds) in seconds; None when not given."""
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
    if not seconds > 0:
        raise ValueError(f"{fn}(timeout={timeout!r}): the timeout must be positive; pass e.g. "
                         "datetime.timedelta(minutes=30), torch's default")
    return seconds


def _set_timeout(group, timeout, fn: str) -> None:
    """Honour ``timeout=`` (torch's argument) as the group's collective timeout: the comm's
    watchdog reads ``group._timeout`` on every call. (It was accepted and ignored: a rank that
    hung waited for the 600 s default instead of the program's 5 s.)"""
    seconds = _timeout_seconds(timeout, fn)
    if seconds is None:
        return
    if hasattr(group, "_timeout"):
        group._timeout = seconds


def _group_rank(g: Communicator, global_rank: int) -> int:
    ranks = getattr(g, "world_ranks", None)
    if ranks is None:
        return global_rank
    try:
        return ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"rank {global_rank} is not in this group (its ranks: {ranks})") from None


def _arr(t, name="tensor") -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a shardflow Tensor, got {type(t).__name__}")
    return t.array


def _run(g, fn, async_op, post=None, tensors=None):
    if async_op:
        return Work(fn(True), post, tensors=tensors)
    fn(False)
    if post is not None:
        post()
    return None


def _bump(*tensors):
    def post():
        for t in tensors:
            t._bump_version()
    return post


# torch's names of the reductions it refuses on complex tensors (``supports_complex``)
_NOT_FOR_COMPLEX = {ReduceOp.MAX: "MAX", ReduceOp.MIN: "MIN", ReduceOp.PRODUCT: "PRODUCT"}


def _check_complex_op(op, arrays) -> None:
    """torch reduces a complex tensor as its real view (SUM and AVG act on both parts);
    an order or a product of complex numbers is not that, so MAX/MIN/PRODUCT raise its
    ``ValueError`` before any communication."""
    if not any(a.dtype.kind == "c" for a in arrays):
        return
    try:
        name = _NOT_FOR_COMPLEX.get(ReduceOp.parse(op))
    except (TypeError, ValueError):  # an op the communicator will refuse in its own words
        return
    if name is not None:
        raise ValueError(f"all_reduce does not support RedOpType.{name} on complex tensors")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    g = _group(group, "all_reduce")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    a = _arr(tensor)
    _check_complex_op(op, [a])
    return _run(g, lambda asy: g.all_reduce(a, op, async_op=asy), async_op, _bump(tensor), [tensor])


def broadcast(tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Broadcast ``tensor`` from global rank ``src`` or group rank ``group_src`` (one of them
    is required, as torch 2.13)."""
    g = _group(group, "broadcast")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    a = _arr(tensor)
    s = _root(g, src, group_src, "broadcast", required=True)
    return _run(g, lambda asy: g.broadcast(a, s, async_op=asy), async_op, _bump(tensor), [tensor])


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    g = _group(group, "all_gather")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    a = _arr(tensor)
    if len(tensor_list) != g.size:
        raise RuntimeError(f"all_gather needs a list of {g.size} tensors (one per rank), got "
                           f"{len(tensor_list)}")  # torch (gloo) raises RuntimeError
    _same_as_input("all_gather", "tensor_list", tensor_list, tensor)
    # Made with the tensor's array module: a device tensor's rows stay on the device (NCCL).
    out = get_array_module(a).empty((g.size, *a.shape), dtype=a.dtype)

    def post():
        for t, row in zip(tensor_list, out):
            t.array[...] = row
            t._bump_version()

    return _run(g, lambda asy: g.all_gather(a, out=out, async_op=asy), async_op, post)


def _same_as_input(fn, name, tensors, like, like_name="input") -> None:
    """torch's checks of an output list before any communication: each entry has the
    input's dtype (torch's ValueError) and shape (gloo's RuntimeError), with the fix. (A
    wrong shape used to fail after the exchange, with some entries written; another dtype
    was cast silently.)"""
    for i, t in enumerate(tensors):
        if t.dtype != like.dtype:
            raise ValueError(f"Invalid usage of tensors with different dtypes Found {like.dtype} "
                             f"and {t.dtype} ({fn}: {name}[{i}] must have the {like_name}'s dtype)")
        if tuple(t.shape) != tuple(like.shape):
            raise RuntimeError(f"ProcessGroupGloo::{fn.replace('_', '')}: invalid tensor size at "
                               f"index {i} (expected {tuple(like.shape)}, got {tuple(t.shape)}); "
                               f"every {name} entry must have the {like_name}'s shape")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    g = _group(group, "all_gather_single")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    a, o = _arr(input_tensor, "input_tensor"), _arr(output_tensor, "output_tensor")
    if o.size != a.size * g.size:
        raise RuntimeError(  # torch (gloo) raises RuntimeError
            f"all_gather_into_tensor: output must hold world_size * input elements "
            f"({g.size} x {tuple(a.shape)}), got shape {tuple(o.shape)}"
        )
    return _run(g, lambda asy: g.all_gather(a, out=o, async_op=asy), async_op,
                _bump(output_tensor), [output_tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    g = _group(group, "reduce_scatter_single")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    a, o = _arr(input, "input"), _arr(output, "output")
    if a.ndim == 0 or o.ndim == 0 or a.shape[0] != o.shape[0] * g.size:
        raise RuntimeError(  # torch (gloo) raises RuntimeError
            f"reduce_scatter_tensor: input dim 0 must be world_size * output dim 0 "
            f"({g.size} x {o.shape[0]}), got input shape {tuple(a.shape)}"
        )
    src = a if a.shape[1:] == o.shape[1:] else a.reshape(g.size * o.shape[0], *o.shape[1:])
    return _run(g, lambda asy: g.reduce_scatter(src, op, out=o, async_op=asy), async_op,
                _bump(output), [output])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list[j]`` over ranks into ``output`` of rank j."""
    g = _group(group, "reduce_scatter")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    if len(input_list) != g.size:
        raise RuntimeError(f"reduce_scatter needs {g.size} input tensors (one per rank), got "
                           f"{len(input_list)}")  # torch (gloo) raises RuntimeError
    o = _arr(output, "output")
    _same_as_input("reduce_scatter", "input_list", input_list, output, "output")
    xp = get_array_module(o)
    stacked = xp.stack([_arr(t, "input_list[i]") for t in input_list])  # (world, *out.shape)
    res = xp.empty((1, *o.shape), dtype=o.dtype)

    def post():
        o[...] = res[0]
        output._bump_version()

    return _run(g, lambda asy: g.reduce_scatter(stacked, op, out=res, async_op=asy), async_op,
                post)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op: bool = False):
    """Rank i's ``input`` rows ``input_split_sizes[j]`` go to rank j, which stores them at
    its ``output_split_sizes[i]`` rows (None: equal splits of dim 0). Uneven splits
    (``a2a_uneven.py``) cost one small blocking all-gather of every rank's sizes (checked:
    a mismatch raises on every rank, naming both ranks) and travel padded to the largest
    split."""
    g = _group(group, "all_to_all_single")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    a, o = _arr(input, "input"), _arr(output, "output")
    if output_split_sizes is None and input_split_sizes is None:
        if any(x.ndim == 0 or x.shape[0] % g.size for x in (a, o)):  # torch's type and words
            raise RuntimeError(
                f"Tensor's dim 0 does not divide equally across group size (all_to_all_single: "
                f"input {tuple(a.shape)}, output {tuple(o.shape)}, {g.size} ranks; pass "
                "output_split_sizes and input_split_sizes for uneven splits)")
        return _run(g, lambda asy: g.all_to_all(a, out=o, async_op=asy), async_op,
                    _bump(output), [output])
    from .a2a_uneven import uneven_all_to_all

    return uneven_all_to_all(g, o, a, output_split_sizes, input_split_sizes,
                             lambda fn, post: _run(g, fn, async_op, post, [output]), output)


def barrier(group=None, async_op: bool = False, device_ids=None, timeout=None):
    """Wait for every rank of ``group``. ``timeout`` (a ``timedelta`` or seconds, torch's
    argument) bounds this barrier instead of the group's timeout (``init_process_group`` /
    ``new_group``): when it passes, the job ends with the timeout report naming the ranks
    that never arrived (deviation: torch's gloo raises a RuntimeError the rank could catch).
    Until session 38 it was accepted and ignored, so a late rank was waited for up to the
    group's 600 s. ``device_ids`` is accepted, as gloo does (the rank's own device)."""
    seconds = _timeout_seconds(timeout, "barrier")
    g = _group(group, "barrier")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    if seconds is None:
        return _run(g, lambda asy: g.barrier(async_op=asy), async_op)
    # the same MPI calls as a blocking barrier (the signature exchange is non-blocking in
    # both), waited for with this call's own limit
    work = Work(g.barrier(async_op=True), timeout=seconds)
    if async_op:
        return work
    work.wait()
    return None


def _peer(g, rank, group_rank, op: str):
    """The peer's rank in ``g`` for a point-to-point ``op``, from its global ``rank`` or its
    ``group_rank`` (torch 2.6's ``group_dst`` / ``group_src``); None when neither is given (a
    receive from any rank). torch's ValueErrors: both given, or the peer is this rank."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{op}: pass either the global rank or the group rank, not both")
        peer = int(group_rank)
    elif rank is None:
        return None
    else:
        peer = _group_rank(g, rank)
    if peer == g.rank:
        role = "destination" if op in ("send", "isend") else "source"
        raise ValueError(f"Invalid {role} rank: {role} rank should not be the same as the rank "
                         f"of the current process. ({op}: rank {rank if group_rank is None else group_rank} "
                         "is this rank; pass the peer's rank)")
    return peer


def _dst(g, dst, group_dst, op: str) -> int:
    peer = _peer(g, dst, group_dst, op)
    if peer is None:
        raise ValueError(f"{op}: pass the destination: dst (a global rank) or group_dst (a group rank)")
    return peer


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    g = _group(group)
    g.send(_arr(tensor), _dst(g, dst, group_dst, "send"), tag)


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive into ``tensor`` from global rank ``src`` (or group rank ``group_src``), or
    from any rank when neither is given (torch's default); returns the sender's global rank."""
    g = _group(group, "recv")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return -1
    a = _arr(tensor)
    peer = _peer(g, src, group_src, "recv")
    got = g.recv(a, peer, tag)
    tensor._bump_version()
    return _global_rank(g, got if peer is None else peer)


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> Work:
    g = _group(group, "isend")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    return Work(g.send(_arr(tensor), _dst(g, dst, group_dst, "isend"), tag, async_op=True))


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> Work:
    """The non-blocking :func:`recv`; with no source (any rank) the Work's
    ``_source_rank()`` is the sender's group rank (torch's method)."""
    g = _group(group, "irecv")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    peer = _peer(g, src, group_src, "irecv")
    inner = g.recv(_arr(tensor), peer, tag, async_op=True)
    return Work(inner, _bump(tensor), any_source=peer is None)


def _global_rank(g, group_rank: int) -> int:
    ranks = getattr(g, "world_ranks", None)
    return int(group_rank) if ranks is None else int(ranks[group_rank])


class P2POp:
    """One op of :func:`batch_isend_irecv`: ``P2POp(dist.isend, tensor, peer)`` or
    ``P2POp(dist.irecv, tensor, peer)`` (``peer`` a global rank, as in PyTorch), or
    ``group_peer=`` the peer's rank in ``group`` (torch 2.6)."""

    __slots__ = ("op", "tensor", "peer", "group", "tag", "group_peer")

    def __init__(self, op, tensor, peer: int | None = None, group=None, tag: int = 0,
                 group_peer: int | None = None):
        if op not in (isend, irecv):
            raise ValueError("P2POp's op must be dist.isend or dist.irecv, got "
                             f"{getattr(op, '__name__', op)!r}")
        if (peer is None) == (group_peer is None):
            raise ValueError("P2POp: pass exactly one of peer (a global rank) and group_peer "
                             f"(a rank in group), got peer={peer!r}, group_peer={group_peer!r}")
        _arr(tensor)
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start the sends and receives of ``p2p_op_list`` as one group and return their Works
    (PyTorch's semantics: all ops on one group; on NCCL one ``ncclGroupStart``/``ncclGroupEnd``
    around them, so ranks that send to each other before receiving cannot deadlock)."""
    ops = list(p2p_op_list)
    if not ops or not all(isinstance(o, P2POp) for o in ops):
        raise ValueError("batch_isend_irecv takes a non-empty list of dist.P2POp")
    if all(o.group is GroupMember.NON_GROUP_MEMBER for o in ops):
        # a rank outside the group: torch's warning, nothing started
        _group(ops[0].group, "isend" if ops[0].op is isend else "irecv")
        return []
    g = _group(ops[0].group)
    if any(_group(o.group) is not g for o in ops[1:]):
        raise ValueError("batch_isend_irecv: all ops must use the same group")
    raw = [("send" if o.op is isend else "recv", _arr(o.tensor),
            int(o.group_peer) if o.peer is None else _group_rank(g, o.peer), o.tag) for o in ops]
    return [Work(w, None if o.op is isend else _bump(o.tensor))
            for o, w in zip(ops, g.batch_p2p(raw))]


def all_gather_object(object_list, obj, group=None) -> None:
    g = _group(group, "all_gather_object")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    got = g.all_gather_object(obj)
    if len(object_list) != len(got):
        raise ValueError(f"all_gather_object needs a list of {len(got)} slots, got {len(object_list)}")
    object_list[:] = got


def broadcast_object_list(object_list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    g = _group(group, "broadcast_object_list")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    root = _root(g, src, group_src, "broadcast_object_list")
    got = g.broadcast_object(list(object_list), root)
    if len(got) != len(object_list):  # torch fills the list in place: it must be as long
        raise ValueError(
            f"broadcast_object_list: rank {_global_rank(g, root)} broadcast {len(got)} objects but this rank's "
            f"object_list has {len(object_list)} slots; pass a list of the same length on every "
            f"rank (e.g. [None] * {len(got)} on the receiving ranks)")
    object_list[:] = got


# -- rooted collectives, built on the symmetric ones ---------------------------------------
# shardflow's engines run all-reduce, all-gather, broadcast and all-to-all; PyTorch's rooted
# forms are those plus a local choice of what to keep, so they cost what the symmetric
# collective costs (the same message sizes on every rank) and fail the same bounded way.


def _root(g, rank, group_rank, what, required: bool = False) -> int:
    """The root's rank in ``g``: ``group_rank`` if given, else the global ``rank`` (default
    global rank 0, as PyTorch's gather / scatter / object collectives). ``required``: torch
    2.13's broadcast and reduce take no default and raise its ValueError (session 38: a
    broadcast without src silently broadcast from rank 0)."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{what}: pass either the global rank or the group rank, not both")
        return int(group_rank)
    if rank is None and required:
        role = "src" if what == "broadcast" else "dst"
        raise ValueError(f"Must specify global_rank or group_rank ({what}: pass {role}=, the "
                         f"global rank, or group_{role}=, the rank in the group; the same on "
                         "every rank)")
    rank = 0 if rank is None else int(rank)
    if g is _comm.get_world() and not 0 <= rank < g.size:
        # the default group: torch (gloo) raises a RuntimeError before any communication
        raise RuntimeError(f"ProcessGroupGloo::{what}: invalid root rank: {rank} (the ranks "
                           f"are 0 .. {g.size - 1}; pass one of them on every rank)")
    return _group_rank(g, rank)


def _rooted_list(fn, name, role, is_root, given, size) -> None:
    """torch's checks of a rooted collective's list, before any communication: ValueError
    when the root has none or another rank passes one (torch's words), RuntimeError for a
    list of another length (torch's gloo type), each with the fix."""
    if is_root and not given:
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank. ({fn}: pass a "
                         f"list of {size} tensors, one per rank)")
    if not is_root and given:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks. "
                         f"({fn}: pass None there; only the {role} rank's list is used)")
    if is_root and len(given) != size:
        raise RuntimeError(f"{fn}: the {role} rank's {name} has {len(given)} tensors; it needs "
                           f"{size}, one per rank of the group")


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Reduce ``tensor`` over the group into ``dst``'s ``tensor``; other ranks' tensors are
    left unchanged. Communication: one all-reduce of a copy."""
    g = _group(group, "reduce")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    root = _root(g, dst, group_dst, "reduce", required=True)
    a = _arr(tensor)
    work = get_array_module(a).array(a, copy=True)

    def post():
        if g.rank == root:
            a[...] = work
            tensor._bump_version()

    # the root rides in the all-reduce's signature: a different dst per rank is a mismatch
    return _run(g, lambda asy: g.all_reduce(work, op, async_op=asy, root=root), async_op, post)


def gather(tensor, gather_list=None, dst: int | None = None, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """``gather_list[i]`` on ``dst`` receives rank i's ``tensor`` (other ranks pass None).
    Communication: one all-gather."""
    g = _group(group, "gather")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    root = _root(g, dst, group_dst, "gather")
    a = _arr(tensor)
    _rooted_list("gather", "gather_list", "destination", g.rank == root, gather_list, g.size)
    out = get_array_module(a).empty((g.size, *a.shape), dtype=a.dtype)

    def post():
        if g.rank == root:
            for t, row in zip(gather_list, out):
                t.array[...] = row
                t._bump_version()

    return _run(g, lambda asy: g.all_gather(a, out=out, async_op=asy, root=root), async_op, post)


def scatter(tensor, scatter_list=None, src: int | None = None, group=None,
            async_op: bool = False, group_src: int | None = None):
    """Rank i's ``tensor`` receives ``scatter_list[i]`` of ``src`` (other ranks pass None).
    Communication: one broadcast of the stacked list (every entry has ``tensor``'s shape)."""
    g = _group(group, "scatter")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    root = _root(g, src, group_src, "scatter")
    a = _arr(tensor)
    xp = get_array_module(a)
    _rooted_list("scatter", "scatter_list", "source", g.rank == root, scatter_list, g.size)
    if g.rank == root:
        dts = [t.dtype for t in scatter_list if t.dtype != tensor.dtype]
        if dts:  # torch's words, on the source before any communication
            raise ValueError(f"Invalid usage of tensors with different dtypes Found "
                             f"{tensor.dtype} and {dts[0]} (scatter: every scatter_list entry "
                             "must have the output tensor's dtype)")
        bad = [tuple(t.shape) for t in scatter_list if tuple(t.shape) != tuple(a.shape)]
        if bad:
            raise ValueError(f"scatter: every scatter_list entry must have the output's shape "
                             f"{tuple(a.shape)}, got {bad}")
        stacked = xp.ascontiguousarray(xp.stack([_arr(t, "scatter_list[i]") for t in scatter_list]))
    else:
        stacked = xp.empty((g.size, *a.shape), dtype=a.dtype)

    def post():
        a[...] = stacked[g.rank]
        tensor._bump_version()

    return _run(g, lambda asy: g.broadcast(stacked, root, async_op=asy), async_op, post)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """``output_tensor_list[j]`` receives rank j's ``input_tensor_list[i]`` (i = this rank).
    All tensors must have one shape (uneven all-to-all is not supported)."""
    g = _group(group, "all_to_all")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    if len(input_tensor_list) != g.size or len(output_tensor_list) != g.size:
        raise RuntimeError(f"all_to_all needs {g.size} input and {g.size} output tensors (one "
                           f"per rank), got {len(input_tensor_list)} and "
                           f"{len(output_tensor_list)}")  # torch (gloo) raises RuntimeError
    shapes = {tuple(t.shape) for t in (*input_tensor_list, *output_tensor_list)}
    if len(shapes) != 1:
        raise NotImplementedError(f"all_to_all with tensors of different shapes {sorted(shapes)} "
                                  "is not supported; pad them to one shape")
    xp = get_array_module(_arr(input_tensor_list[0]))
    src = xp.ascontiguousarray(xp.stack([_arr(t, "input_tensor_list[i]") for t in input_tensor_list]))
    out = xp.empty_like(src)

    def post():
        for t, row in zip(output_tensor_list, out):
            t.array[...] = row
            t._bump_version()

    return _run(g, lambda asy: g.all_to_all(src, out=out, async_op=asy), async_op, post)


def gather_object(obj, object_gather_list=None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    g = _group(group, "gather_object")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    root = _root(g, dst, group_dst, "gather_object")
    got = g.all_gather_object((root, obj))  # the dst rides along: every rank checks it
    roots = [r for r, _ in got]
    if len(set(roots)) > 1:
        ranks = get_process_group_ranks(group)
        said = ", ".join(f"rank {ranks[i]}: dst={ranks[r]}" for i, r in enumerate(roots))
        raise ValueError(f"gather_object: the ranks passed different destinations ({said}); "
                         "pass the same dst on every rank")
    got = [o for _, o in got]
    if g.rank == root:
        if object_gather_list is None or len(object_gather_list) != len(got):
            raise ValueError(f"gather_object: the destination rank needs a list of {len(got)} "
                             "slots")
        object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    g = _group(group, "scatter_object_list")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    root = _root(g, src, group_src, "scatter_object_list")
    got = g.broadcast_object(list(scatter_object_input_list or []) if g.rank == root else None,
                             root)
    if len(got) != g.size:
        raise ValueError(f"scatter_object_list: the source passed {len(got)} objects for "
                         f"{g.size} ranks")
    scatter_object_output_list[0] = got[g.rank]


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that raises torch's ``Rank 1 failed to pass monitoredBarrier in 2000 ms``
    when ``timeout`` passes first (``monitored.py``)."""
    from .monitored import monitored_barrier as _monitored

    g = _group(group, "monitored_barrier")
    if g is not None:
        _monitored(g, timeout, wait_all_ranks, lambda: barrier(group))


# -- global tensors (placement + sbp) and tensor parallelism: docs/GLOBAL.md ----------------
from . import device_mesh, sbp  # noqa: E402,F401  (torch.distributed.device_mesh: an attribute too)
from .global_tensor import (  # noqa: E402
    distribute_tensor,
    from_local,
    full_tensor,
    local_map,
    redistribute,
    to_global,
    to_local,
)
from .placement import DeviceMesh, init_device_mesh, placement  # noqa: E402
from .plan import CommPlan, comm_plan  # noqa: E402

__all__ += [
    "sbp", "placement", "DeviceMesh", "init_device_mesh", "to_global", "to_local", "from_local",
    "distribute_tensor", "redistribute", "full_tensor", "comm_plan", "CommPlan", "local_map",
]

# -- one parallel config (dp x tp x pp, zero): docs/PIPELINE.md ----------------------------
from .parallel_config import parallelize  # noqa: E402

__all__ += ["parallelize"]

# -- torch.distributed's smaller names: docs/COMPAT.md "torch.distributed's smaller names" ---
from .errors import (  # noqa: E402
    DebugLevel,
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    get_debug_level,
    get_pg_count,
    is_torchelastic_launched,
    set_debug_level,
    set_debug_level_from_env,
    supports_complex,
)

__all__ += _errors.__all__
from .store import FileStore, HashStore, PrefixStore, Store, TCPStore  # noqa: E402

__all__ += ["send_object_list", "recv_object_list", "all_reduce_coalesced",
            "all_gather_coalesced", "new_subgroups", "new_subgroups_by_enumeration", "Store", "HashStore",
            "FileStore", "TCPStore", "PrefixStore"]


# ---------------------------------------------------------------------------- coalesced
# ``all_reduce_coalesced`` / ``all_gather_coalesced``: one collective for a list of tensors
# (layer L6).
#
# Communication plan: the tensors (one dtype; torch's gloo requires it too) are flattened into
# one contiguous buffer, ``[t0.ravel(), t1.ravel(), ...]`` (total elements E), that goes
# through one all-reduce, or one all-gather into ``(world, E)``; the results are then copied
# back into the tensors (all-reduce, in place) or into ``output_tensor_lists[rank][i]``
# (all-gather). So a list of many small tensors costs one message, as in torch.
def _flat(tensors, what, complex_as_real=False):
    """The tensors' arrays and their concatenation (one dtype); with ``complex_as_real`` a
    complex array enters as its real view (re, im pairs: torch's ``view_as_real``)."""

    arrays = [_arr(t, f"{what}[{i}]") for i, t in enumerate(tensors)]
    if not arrays:
        raise ValueError(f"{what} is empty; pass at least one tensor")
    xp = get_array_module(arrays[0])
    parts = [xp.stack([a.real, a.imag], -1) if complex_as_real and a.dtype.kind == "c" else a
             for a in arrays]
    dtypes = sorted({str(a.dtype) for a in parts})
    if len(dtypes) != 1:
        raise ValueError(f"{what}: all tensors must have one dtype to be coalesced, got "
                         f"{dtypes}; cast them to one dtype or call the collective per tensor")
    return arrays, xp.concatenate([a.reshape(-1) for a in parts])  # (E,)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce every tensor of ``tensors`` over the group, in place, with one all-reduce. A
    complex tensor travels as its real view (re, im pairs), as torch's ``view_as_real``: it
    coalesces with real tensors of its parts' dtype (complex64 with float32)."""

    g = _group(group, "all_reduce_coalesced")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    tensors = list(tensors)
    _check_complex_op(op, [_arr(t, f"all_reduce_coalesced: tensors[{i}]")
                           for i, t in enumerate(tensors)])
    arrays, flat = _flat(tensors, "all_reduce_coalesced: tensors", complex_as_real=True)

    def post():
        start = 0
        for t, a in zip(tensors, arrays):
            if a.dtype.kind == "c":  # its 2 * size real entries, interleaved re, im
                pairs = flat[start:start + 2 * a.size].reshape(*a.shape, 2)
                a[...] = pairs[..., 0] + 1j * pairs[..., 1]
                start += 2 * a.size
            else:
                a[...] = flat[start:start + a.size].reshape(a.shape)
                start += a.size
            t._bump_version()

    return _run(g, lambda asy: g.all_reduce(flat, op, async_op=asy), async_op, post)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None,
                         async_op: bool = False):
    """``output_tensor_lists[j][i]`` receives rank j's ``input_tensor_list[i]``, with one
    all-gather (every rank passes the same shapes)."""

    g = _group(group, "all_gather_coalesced")
    if g is None:  # a rank outside the group: torch's warning, nothing done
        return None
    arrays, flat = _flat(list(input_tensor_list), "all_gather_coalesced: input_tensor_list")
    if len(output_tensor_lists) != g.size:
        raise ValueError(f"all_gather_coalesced needs output_tensor_lists of {g.size} lists "
                         f"(one per rank), got {len(output_tensor_lists)}")
    for j, outs in enumerate(output_tensor_lists):
        shapes = [tuple(_arr(o, f"output_tensor_lists[{j}][i]").shape) for o in outs]
        if shapes != [tuple(a.shape) for a in arrays]:
            raise ValueError(f"all_gather_coalesced: output_tensor_lists[{j}] must have the "
                             f"input shapes {[tuple(a.shape) for a in arrays]}, got {shapes}")
    out = get_array_module(flat).empty((g.size, flat.size), dtype=flat.dtype)  # (world, E)

    def post():
        for row, outs in zip(out, output_tensor_lists):
            start = 0
            for o in outs:
                o.array[...] = row[start:start + o.array.size].reshape(o.array.shape)
                start += o.array.size
                o._bump_version()

    return _run(g, lambda asy: g.all_gather(flat, out=out, async_op=asy), async_op, post)


# ---------------------------------------------------------------------------- object p2p
# ``send_object_list`` / ``recv_object_list``: point-to-point of picklable objects (layer L6).
#
# Protocol (torch's): the sender pickles each object and sends one int64 array of the pickles'
# sizes (one per object), then one uint8 array of the pickles back to back. The receiver's
# sizes buffer has ``len(object_list)`` entries, so a receiver whose list length differs from
# the sender's gets the comm layer's bounded, named mismatch error instead of wrong objects.
# Received objects are unpickled and written into ``object_list[i]`` in place. Both messages are
# host arrays (over MPI, also on an NCCL group: its control channel). Like torch, unpickling
# runs code from the peer: receive only from ranks you trust. A rank outside ``group`` returns
# at once (``recv_object_list`` returns -1), as torch.
def _resolve(group, rank, group_rank, what):

    if group is GroupMember.NON_GROUP_MEMBER:
        return None, None

    g: Communicator = _group(group)
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{what}: pass either the global rank or the group rank, not both")
        return g, int(group_rank)
    if rank is None:
        raise ValueError(f"{what}: pass the peer's rank (a global rank) or its group rank")
    return g, _group_rank(g, int(rank))


def _check_use_batch(use_batch, what: str) -> None:
    if not isinstance(use_batch, bool):
        raise TypeError(f"{what}: use_batch must be True or False, got {use_batch!r}")


def send_object_list(object_list, dst: int | None = None, group=None, device=None,
                     group_dst: int | None = None, use_batch: bool = False) -> None:
    """Send the picklable objects of ``object_list`` to ``dst`` (a global rank), which calls
    :func:`recv_object_list` with a list of the same length. ``device``: the bytes travel as
    host memory whatever it says. ``use_batch``: torch's choice of transport (batched p2p on
    the group's communicator instead of a two-rank one); MPI sends through the group's
    communicator either way, so both values deliver the same objects."""
    _check_use_batch(use_batch, "send_object_list")
    g, peer = _resolve(group, dst, group_dst, "send_object_list")
    if g is None:
        return
    if peer == g.rank:
        raise ValueError("Invalid destination rank: destination rank should not be the same as "
                         "the rank of the current process.")
    blobs = [pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL) for o in object_list]
    if not blobs:
        raise ValueError("send_object_list: object_list is empty; pass at least one object")
    g.send(np.array([len(b) for b in blobs], dtype=np.int64), peer, 0)  # (n,) sizes
    g.send(np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(), peer, 0)  # (sum sizes,)


def recv_object_list(object_list, src: int | None = None, group=None, device=None,
                     group_src: int | None = None, use_batch: bool = False) -> int:
    """Receive ``len(object_list)`` objects sent by :func:`send_object_list` from ``src``
    into ``object_list`` (in place); returns the sender's global rank. ``src=None``: from
    any rank (torch's default), the first whose sizes message arrives. ``use_batch``: as
    :func:`send_object_list` (a transport choice; the same objects arrive)."""
    _check_use_batch(use_batch, "recv_object_list")
    if src is None and group_src is None:
        if group is GroupMember.NON_GROUP_MEMBER:
            return -1
        g, peer = _group(group), None
    else:
        g, peer = _resolve(group, src, group_src, "recv_object_list")
    if g is None:
        return -1
    if peer == g.rank:
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    if not len(object_list):
        raise ValueError("recv_object_list: object_list is empty; pass one slot per object "
                         "sent (e.g. [None] * n)")
    sizes = np.empty(len(object_list), dtype=np.int64)  # (n,)
    got = g.recv(sizes, peer, 0)
    peer = got if peer is None else peer  # from any rank: the comm returns the sender
    payload = np.empty(int(sizes.sum()), dtype=np.uint8)  # (sum sizes,)
    g.recv(payload, peer, 0)
    raw, offsets = payload.tobytes(), np.cumsum([0, *sizes.tolist()])
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        object_list[i] = pickle.loads(raw[a:b])
    ranks = getattr(g, "world_ranks", None)
    return peer if ranks is None else ranks[peer]


# ---------------------------------------------------------------------------- subgroups
# ``new_subgroups`` / ``new_subgroups_by_enumeration``: many groups in one call, over
# ``new_group`` (layer L6).
#
# Every rank of the world calls them with the same arguments (``new_group`` is collective over
# the world): each subgroup is made with one ``new_group`` call, in list order, on every rank,
# and each rank keeps the one it belongs to. The lists are checked (non-empty, no rank in two
# subgroups, sizes that divide the group) before any group is made, so a bad argument changes
# nothing.
def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One group per list of global ranks in ``ranks_per_subgroup_list``; returns
    ``(cur_subgroup, subgroups)``: the group holding this rank (None if none does) and all
    groups (a non-member's entry is ``GroupMember.NON_GROUP_MEMBER``, as ``new_group``)."""

    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    owner: dict[int, list] = {}
    for ranks in ranks_per_subgroup_list:
        for rank in ranks:
            if rank in owner:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} and "
                                 f"{ranks}")
            owner[rank] = ranks
    me = get_rank()
    subgroups, cur_subgroup = [], None
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options)
        subgroups.append(subgroup)
        if me in ranks:
            cur_subgroup = subgroup
    return cur_subgroup, subgroups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split ``group`` (default: the world) into consecutive subgroups of ``group_size``
    ranks (default: the number of GPUs of this host, which needs CUDA); returns
    ``(cur_subgroup, subgroups)`` as :func:`new_subgroups_by_enumeration`."""

    if group_size is None:
        if accelerator.device_count() == 0:
            raise ValueError(
                "Default group size only takes effect when CUDA is available."
                "If your subgroup using a backend that does not depend on CUDA,"
                "please pass in 'group_size' correctly."
            )
        group_size = accelerator.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group)
    return new_subgroups_by_enumeration(
        [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)],
        timeout=timeout, backend=backend, pg_options=pg_options, group_desc=group_desc,
    )


# ---------------------------------------------------------------------------- c10d extras
# torch's remaining c10d names (docs/COMPAT.md "torch.distributed's smaller names"): the
# ``*_single`` spellings, ``split_group``, ``get_backend_config``, ``breakpoint``; the ones
# that need no process group are in ``c10d_names.py``.
from .backend_names import BackendConfig  # noqa: E402
from .c10d_names import (  # noqa: E402
    AllreduceCoalescedOptions,
    AllreduceOptions,
    AllToAllOptions,
    BarrierOptions,
    BroadcastOptions,
    BuiltinCommHookType,
    GatherOptions,
    GradBucket,
    ReduceOptions,
    ReduceScatterOptions,
    ScatterOptions,
    is_ucc_available,
    is_xccl_available,
    reduce_op,
    register_rendezvous_handler,
    rendezvous,
)
from .errors import QueueEmptyError  # noqa: E402

__all__ += [
    "all_gather_single", "reduce_scatter_single", "split_group", "get_backend_config",
    "breakpoint", "BackendConfig", "AllreduceCoalescedOptions", "AllreduceOptions",
    "AllToAllOptions", "BarrierOptions", "BroadcastOptions", "BuiltinCommHookType",
    "GatherOptions", "GradBucket", "ReduceOptions", "ReduceScatterOptions", "ScatterOptions",
    "is_ucc_available", "is_xccl_available", "reduce_op", "register_rendezvous_handler",
    "rendezvous", "QueueEmptyError",
]

# torch.distributed's subpackages that ``import torch`` makes attributes: imported on first
# use (PEP 562), so ``import shardflow`` does not pay for RPC's transport
_LAZY_SUBMODULES = ("algorithms", "autograd", "rpc", "distributed_c10d")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# torch's names of the same collectives (same signatures and semantics)
all_gather_single = all_gather_into_tensor
reduce_scatter_single = reduce_scatter_tensor


def get_backend_config(group=None) -> str:
    """The device -> backend map of the backend ``init_process_group`` was given, as torch's
    string (``"gloo"`` -> ``"cpu:gloo,cuda:gloo"``; none given -> ``"cpu:gloo"``, plus
    ``cuda:nccl`` with a GPU); raises before init_process_group, as torch."""
    g = _group(group)
    if g is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return str(BackendConfig(_asked_backend[0] or Backend.UNDEFINED))


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None,
                group_desc=None, backend=None):
    """Split ``parent_pg`` (default: the world) into the groups ``split_ranks`` lists (ranks
    of the parent, not global ranks, as torch); returns the group holding this rank, None if
    none does. Every rank of the parent calls it. Communication: one group creation (an MPI
    ``Split``) over the parent per listed group, in list order; the lists are checked first,
    so a bad argument changes nothing."""
    if not split_ranks:
        raise ValueError("split_ranks cannot be None or empty")
    parent = _group(parent_pg)
    seen: dict[int, list] = {}
    for ranks in split_ranks:
        for r in ranks:
            if not 0 <= int(r) < parent.size:
                raise ValueError(f"split_group: rank {r} of {list(ranks)} is not a rank of the "
                                 f"parent group (0 .. {parent.size - 1}); split_ranks are "
                                 "group ranks of parent_pg")
            if r in seen:
                raise ValueError(f"split_group: rank {r} is in both {seen[r]} and "
                                 f"{list(ranks)}; the splits must not overlap")
            seen[r] = list(ranks)
    mine = None
    for ranks in split_ranks:
        sub = parent.new_group(list(ranks))
        _errors._count_group()
        if sub is not None:
            mine = sub
    return mine


def _debugger():
    import pdb  # the debugger is made only when a breakpoint is hit

    return pdb.Pdb()


_breakpoint_hits: dict[str, int] = {}


def breakpoint(rank: int = 0, skip: int = 0, timeout_s=3600):  # noqa: A001 - torch's name
    """Stop in the debugger on ``rank`` only; the other ranks wait in a barrier until it
    continues (torch's ``dist.breakpoint``). ``skip``: the first ``skip`` calls from the same
    place return at once. While the barrier waits, the collective timeout is at least
    ``timeout_s``, so a debugging session does not end the job. Under ``shardflow run`` the
    debugger's input is rank 0's stdin (mpiexec forwards stdin to rank 0 only)."""
    import sys
    import traceback

    caller = sys._getframe(1)
    if skip > 0:
        key = "".join(traceback.format_stack(caller, limit=1))
        _breakpoint_hits[key] = _breakpoint_hits.get(key, 0) + 1
        if _breakpoint_hits[key] <= skip:
            return
    g = _group(None)
    if get_rank() == rank:
        dbg = _debugger()
        dbg.message(f"\n!!! ATTENTION !!!\n\nType 'up' to get to the frame that called "
                    f"dist.breakpoint(rank={rank})\n")
        dbg.set_trace()  # stops in this function, before the barrier: 'up' is the caller
    before = getattr(g, "_timeout", None)
    if before is not None and timeout_s is not None:
        g._timeout = max(before, float(timeout_s))  # read by the comm's watchdog per call
    try:
        barrier()
    finally:
        if before is not None:
            g._timeout = before
