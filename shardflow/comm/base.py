"""The ``Communicator`` interface: collectives on raw backend arrays (layer L2).

A communicator is a group of ranks. Every method works on raw arrays (NumPy ``ndarray``
now, CuPy arrays with the NCCL backend later) and knows nothing of autograd. Conventions
(torch.distributed's, moved to arrays):

* ``all_reduce(a, op)`` reduces **in place** into ``a`` and returns it.
* ``broadcast(a, src)`` overwrites ``a`` on every rank but ``src``.
* ``all_gather(a)`` returns a new array of shape ``(world, *a.shape)`` (or writes ``out``).
* ``reduce_scatter(a, op)`` takes ``a`` of shape ``(world * n, ...)`` and returns rank r's
  reduced block ``(n, ...)``  (PyTorch's ``reduce_scatter_tensor``).
* ``all_to_all(a)`` splits dim 0 into ``world`` blocks; block j goes to rank j.
* ``send`` / ``recv`` are point-to-point; ``recv`` fills its argument in place. Tags are
  ints in ``0 .. TAG_MAX`` (:func:`check_tag`: torch's RuntimeError "Tag must be
  nonnegative"; a negative tag used to hang both ranks, an MPI send with tag -1 never
  matching the receive).
* ``batch_p2p(ops)`` starts a list of ``("send" | "recv", array, peer, tag)`` as one group and
  returns one :class:`Work` per op (``torch.distributed.batch_isend_irecv``): the ops progress
  together, so two ranks that each send to and receive from the other in one batch cannot
  wait on each other (NCCL posts them between ``ncclGroupStart``/``ncclGroupEnd``).
* Every collective takes ``async_op``; with ``True`` it returns a :class:`Work` whose
  ``wait()`` completes it (and returns the result), else it returns the result.

Every collective increments the communicator's *sequence number*; all ranks must call the
same collectives in the same order (MPI's rule). The sequence number is what timeouts and
the ``SHARDFLOW_DEBUG=collectives`` check report.
"""

from __future__ import annotations

import pickle

import numpy as np


class ReduceOp:
    """Reduction operators, named as in ``torch.distributed.ReduceOp``."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "prod"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
    BAND = "band"  # bitwise, integer tensors only (as torch's gloo; NCCL has none)
    BOR = "bor"
    BXOR = "bxor"

    _ALL = ("sum", "avg", "prod", "max", "min", "band", "bor", "bxor")
    _BITWISE = ("band", "bor", "bxor")

    @classmethod
    def parse(cls, op) -> str:
        """Accept ``ReduceOp.SUM``, ``"sum"``, ``"SUM"``, ``"mean"``/``"average"`` (avg), ``"product"``."""
        if isinstance(op, str):
            name = op.lower()
            name = {"mean": "avg", "average": "avg", "product": "prod"}.get(name, name)
            if name in cls._ALL:
                return name
        raise ValueError(
            f"unknown reduce op {op!r}; expected one of ReduceOp.SUM, AVG, PRODUCT, MAX, MIN, "
            "BAND, BOR, BXOR (or the strings 'sum', 'avg', 'prod', 'max', 'min', 'band', 'bor', "
            "'bxor')"
        )


class CommError(RuntimeError):
    """A collective failed or was called inconsistently across ranks."""


class CommTimeoutError(CommError):
    """A collective did not complete within the timeout."""


class Work:
    """Handle of an asynchronous operation (torch.distributed's ``Work``).

    ``wait(timeout=None)`` blocks until the operation completed and returns its result
    (the array it produced). ``is_completed()`` tests without blocking (and drives MPI
    progress). ``result()`` returns the result after ``wait``.
    """

    def wait(self, timeout: float | None = None):  # pragma: no cover - interface
        raise NotImplementedError

    def is_completed(self) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def result(self):  # pragma: no cover - interface
        raise NotImplementedError


class CompletedWork(Work):
    """A Work that is already done (world of one, zero-size arrays)."""

    __slots__ = ("_value",)

    def __init__(self, value=None):
        self._value = value

    def wait(self, timeout: float | None = None):
        return self._value

    def is_completed(self) -> bool:
        return True

    def result(self):
        return self._value


class Communicator:
    """Base class of the backends; see the module docstring for the semantics."""

    backend: str = "none"
    # True once the group is destroyed (``free``; shardflow.distributed.destroy_process_group
    # sets it too): every later call raises (the MPI backend's resources are freed; using
    # them crashed the process with a segmentation fault)
    destroyed: bool = False

    @property
    def rank(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def size(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    # torch spellings
    def get_rank(self) -> int:
        return self.rank

    def get_world_size(self) -> int:
        return self.size

    # -- collectives -------------------------------------------------------------------
    def all_reduce(self, array, op=ReduceOp.SUM, async_op: bool = False, root: int = -1):
        """``root`` (-1: none) is the rank a rooted call built on this one serves (dist.reduce's
        dst): it rides in the call signature, so ranks that pass different roots get the
        collective-mismatch error instead of each keeping a different result."""
        raise NotImplementedError

    def broadcast(self, array, src: int = 0, async_op: bool = False):
        raise NotImplementedError

    def all_gather(self, array, out=None, async_op: bool = False, root: int = -1):
        """``root`` as for :meth:`all_reduce` (dist.gather's dst)."""
        raise NotImplementedError

    def reduce_scatter(self, array, op=ReduceOp.SUM, out=None, async_op: bool = False):
        raise NotImplementedError

    def all_to_all(self, array, out=None, async_op: bool = False):
        raise NotImplementedError

    def barrier(self, async_op: bool = False):
        raise NotImplementedError

    def send(self, array, dst: int, tag: int = 0, async_op: bool = False):
        raise NotImplementedError

    def recv(self, array, src: int, tag: int = 0, async_op: bool = False):
        raise NotImplementedError

    def batch_p2p(self, ops) -> list:
        """Start ``ops`` (``("send" | "recv", array, peer, tag)``) together; one Work per op.

        Default (MPI, the world of one): every op is started non-blocking, the receives
        first, then the sends, each kind in list order (the order MPI matches messages of one
        (source, tag) by). A non-blocking op never waits for its peer, so no order of the
        batches on two ranks can deadlock; posting the receives first lets a send above the
        eager limit match at once.
        """
        ops = check_p2p_ops(ops, self.size, self.rank)
        works: list = [None] * len(ops)
        for kind in ("recv", "send"):
            start = self.recv if kind == "recv" else self.send
            for i, (op, array, peer, tag) in enumerate(ops):
                if op == kind:
                    works[i] = start(array, peer, tag, async_op=True)
        return works

    def all_gather_object(self, obj) -> list:
        """Gather one picklable Python object per rank (small control data only)."""
        raise NotImplementedError

    def broadcast_object(self, obj, src: int = 0):
        raise NotImplementedError

    def new_group(self, ranks):
        """A communicator over ``ranks`` (all ranks of ``self`` must call it; non-members get None)."""
        raise NotImplementedError

    def progress(self) -> None:
        """Drive outstanding non-blocking operations (MPI progresses only inside MPI calls)."""

    def background_progress(self, on: bool, force: bool = False) -> bool:
        """Ask for (``True``) or release (``False``) progress of outstanding operations in the
        background while the caller computes (MPI: a polling thread, ``mpi_progress.py``,
        when the configuration or ``force`` asks for it). Returns whether the request took
        effect; release only those that did. Nothing to do for backends that progress on
        their own."""
        return False

    def free(self) -> None:
        """Release backend resources."""

    # -- helpers for subclasses ----------------------------------------------------------
    def _check_reduce_scatter(self, array):
        if array.ndim == 0 or array.shape[0] % self.size != 0:
            raise ValueError(
                f"reduce_scatter needs an input whose dim 0 is a multiple of the world size "
                f"{self.size}; got shape {tuple(array.shape)}. Pad the input or pass "
                f"world_size * n rows"
            )
        return (array.shape[0] // self.size, *array.shape[1:])

    def _check_all_to_all(self, array):
        if array.ndim == 0 or array.shape[0] % self.size != 0:
            raise ValueError(
                f"all_to_all needs an input whose dim 0 is a multiple of the world size "
                f"{self.size}; got shape {tuple(array.shape)}"
            )


TAG_MAX = 2**31 - 1  # MPI tags are C ints (Open MPI's MPI_TAG_UB)


def check_tag(tag, op: str) -> int:
    """``tag`` as an int in ``0 .. TAG_MAX``: torch's RuntimeError "Tag must be nonnegative"
    (a TypeError for a non-int), with the fix, before anything is posted."""
    if isinstance(tag, bool) or not isinstance(tag, (int, np.integer)):
        raise TypeError(f"{op}: tag must be an int, got {type(tag).__name__} {tag!r}")
    if tag < 0:
        raise RuntimeError(f"Tag must be nonnegative ({op}(tag={tag}): pass a tag >= 0, the same "
                           "on the send and on its recv)")
    if tag > TAG_MAX:
        raise RuntimeError(f"{op}: tag {tag} is above the largest tag {TAG_MAX} (MPI tags are C "
                           "ints); pass a smaller tag, the same on the send and on its recv")
    return int(tag)


def check_p2p_ops(ops, size: int, rank: int) -> list:
    """``batch_p2p``'s ops as a list of ``(op, array, peer, tag)``, each checked."""
    out = []
    for item in ops:
        try:
            op, array, peer, tag = item
        except (TypeError, ValueError):
            raise TypeError(f"batch_p2p takes (op, array, peer, tag) tuples, got {item!r}") from None
        if op not in ("send", "recv"):
            raise ValueError(f"batch_p2p op must be 'send' or 'recv', got {op!r}")
        peer, tag = int(peer), check_tag(tag, f"batch_p2p {op}")
        if not 0 <= peer < size:
            raise ValueError(f"batch_p2p {op}: peer rank {peer} is outside the group 0 .. {size - 1}")
        if peer == rank:
            raise ValueError(f"batch_p2p {op}: a rank cannot {op} to/from itself (rank {rank})")
        out.append((op, array, peer, tag))
    return out


_CANONICAL = frozenset(ReduceOp._ALL)  # ReduceOp.SUM etc. are these strings: no parsing


def checked_reduce_op(op, array) -> str:
    """``op`` as a ``ReduceOp`` string (``ReduceOp.parse``), with AVG refused for a
    non-floating ``array`` (:func:`check_avg_dtype`): every backend's reductions start here."""
    try:
        known = op in _CANONICAL
    except TypeError:  # unhashable: ReduceOp.parse says what is accepted
        known = False
    if not known:
        op = ReduceOp.parse(op)
    if op == "avg":
        check_avg_dtype(array)
    elif op in ReduceOp._BITWISE and array.dtype.kind not in "iu":
        raise RuntimeError(  # torch's gloo: "Cannot use ReduceOp.BAND with non-integral dtype"
            f"Cannot use ReduceOp.{op.upper()} with non-integral dtype {array.dtype}: bitwise "
            "reductions take integer tensors (cast a bool tensor to torch.uint8 first)")
    return op


def check_avg_dtype(array) -> None:
    """AVG of an integer or bool array is refused before any communication, with torch's
    type (``RuntimeError``: its gloo run fails casting the float mean into the integer
    tensor, "result type Float can't be cast to the desired output type Long")."""
    if np.issubdtype(array.dtype, np.inexact) or array.dtype.kind == "V" or (
        array.dtype.name == "bfloat16"
    ):
        return
    raise RuntimeError(
        f"ReduceOp.AVG needs a floating-point (or complex) tensor, got dtype {array.dtype}: "
        "the average is not an integer (torch: \"result type Float can't be cast to the "
        "desired output type\"); use ReduceOp.SUM and divide, or cast to float32 first"
    )


def pickled(obj, op: str, rank: int) -> bytes:
    """``pickle.dumps(obj)`` for an object collective; an object that cannot be pickled
    raises its own exception type (torch's: the pickle error) with the operation, the rank
    and the fix, before the collective starts (the other ranks then wait in it until this
    rank's uncaught error ends the job, or its next collective reports the mismatch)."""
    try:
        return pickle.dumps(obj)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise type(e)(f"{op} on rank {rank}: the object could not be pickled ({e}). Object "
                      "collectives send picklable objects only (no lambdas, local functions, "
                      "open files, locks or generators): pass plain data, e.g. a dict of "
                      "numbers and strings") from e
