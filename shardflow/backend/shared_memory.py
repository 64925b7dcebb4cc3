"""Shared-memory arrays: the storage behind ``Tensor.share_memory_()`` and the tensors that
``shardflow.multiprocessing`` sends between processes (PyTorch's CPU sharing, on NumPy).

A shared array is a NumPy array whose buffer is a ``SharedSegment``: a ``MAP_SHARED`` mmap of
a shared-memory file. Every process that maps the file sees the same bytes, so an in-place
write (``t.add_(1)``, an optimizer step) in one process is seen by all. Fork keeps the
mapping in the child; other processes map the file again (``attach_fd`` / ``attach_named``).
``is_shared(array)`` walks the array's ``.base`` chain to its buffer.

Moving arrays (``share_arrays``): an array is copied into a new segment with the same shape,
dtype and stride order; several arrays that view one array (tied weights, ``Parameter(t)``)
and are moved together share one copy of that array, at the same offsets, so they stay
views of each other. A 0-element array cannot be mapped: it is marked shared by an empty
``_EmptyShared`` buffer and travels as its shape alone.

Lifetime, per sharing strategy (PyTorch's names; chosen by ``set_sharing_strategy`` and read
when an array is moved; an array keeps its segment's kind):

* ``"file_descriptor"`` (default): the file is anonymous (``os.memfd_create``; elsewhere a
  temporary file unlinked at once), so it never has a name in ``/dev/shm``. Each process
  that maps it keeps one descriptor open (closed when the segment is garbage collected);
  another process receives the descriptor itself (``multiprocessing.reduction.DupFd``). The
  kernel frees the memory when the last mapping and descriptor are gone, whichever
  processes exit or are killed first: nothing can leak. Costs: one descriptor per shared
  array per process (``ulimit -n``), and a sender must be alive when a receiver unpickles.
* ``"file_system"``: a named file ``/dev/shm/shardflow_<pid>_<n>_<random>``, found by
  name, no descriptor kept. Its first ``HEADER`` bytes hold a reference count (updated
  under ``flock``): one per process mapping it, one per pickled message not yet unpickled
  (taken by ``add_reference`` when the sender pickles, handed to the receiver's mapping).
  The process dropping the count to zero unlinks the name; mappings stay valid after that.
  Crash backstop: the creator registers the name with ``multiprocessing``'s resource
  tracker, which unlinks what is left when every process sharing the tracker has exited
  (PyTorch runs its ``torch_shm_manager`` daemon for this). A forked child uses its
  parent's mapping without a reference of its own.

Releases run through ``multiprocessing.util.Finalize``: when the segment is garbage
collected and, for named segments, at the exit of the process (main, spawned, forked or
forkserver child) after its queues have flushed, but never in a forked child for its
parent's segments.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
import tempfile
import threading
import weakref

import numpy as np

__all__ = [
    "HEADER", "SharedSegment", "add_reference", "array_in", "attach_fd", "attach_named",
    "cached", "empty_shared", "get_all_sharing_strategies", "get_sharing_strategy", "is_shared",
    "location", "set_sharing_strategy", "share_arrays",
]

HEADER = 64  # file_system segments: int64 reference count, padded so data stays aligned
_COUNT = struct.Struct("q")
_STRATEGIES = ("file_descriptor", "file_system")
_strategy = ["file_descriptor"]
_names = itertools.count()
_segments: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key -> live segment
lock = threading.RLock()  # share_memory_ from several threads (a Queue's feeder and the caller)


def get_all_sharing_strategies() -> set[str]:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    if new_strategy not in _STRATEGIES:
        raise ValueError(
            f"sharing strategy must be one of {sorted(_STRATEGIES)}, got {new_strategy!r}")
    _strategy[0] = new_strategy


class SharedSegment(mmap.mmap):
    """A ``MAP_SHARED`` mapping of a shared-memory file, the buffer of shared arrays.

    ``kind`` is ``"fd"`` (anonymous file; ``fd`` stays open) or ``"name"`` (``name`` in
    ``directory``; data starts after ``HEADER``); ``key`` identifies the file across
    processes; ``data_offset`` is where array data starts; ``address`` is the mapping's
    start in this process."""


class _EmptyShared(bytearray):
    """The buffer of a 0-element shared array (nothing to map; it is shared by definition)."""


# ---------------------------------------------------------------------------- queries
def _buffer_of(array: np.ndarray):
    b = array
    while isinstance(b, np.ndarray):
        b = b.base
    return b


def is_shared(array) -> bool:
    """True when ``array`` is a NumPy array in shared memory."""
    return isinstance(array, np.ndarray) and isinstance(_buffer_of(array), SharedSegment | _EmptyShared)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def location(array: np.ndarray):
    """``(segment, byte offset of array[0, ..., 0] in it)`` of a shared array; ``(None, 0)``
    for a 0-element one."""
    buf = _buffer_of(array)
    if isinstance(buf, _EmptyShared):
        return None, 0
    if not isinstance(buf, SharedSegment):
        raise ValueError("location() of an array that is not in shared memory; call share_arrays first")
    return buf, _address(array) - buf.address


def array_in(segment: SharedSegment, offset: int, shape, strides, dtype) -> np.ndarray:
    """The array ``(shape, strides, dtype)`` whose first element is at ``offset`` in ``segment``."""
    return np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=segment, offset=offset,
                      strides=tuple(strides))


def empty_shared(shape, dtype) -> np.ndarray:
    return np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=_EmptyShared())


# ---------------------------------------------------------------------------- moving arrays
def share_arrays(arrays) -> list[np.ndarray]:
    """Shared-memory versions of ``arrays`` (same values, shapes, dtypes; already shared ones
    are returned as they are). Arrays in the list that view one contiguous array become
    views of one shared copy of it at the same offsets and strides; the others are copied
    alone, keeping their stride order."""
    out = list(arrays)
    groups: dict[int, tuple[np.ndarray, list[int]]] = {}
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"share_arrays() takes NumPy arrays, got {type(a).__name__}")
        if is_shared(a):
            continue
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        groups.setdefault(id(root), (root, []))[1].append(i)
    for root, members in groups.values():
        dense_root = root.flags.c_contiguous or root.flags.f_contiguous
        if len(members) > 1 and dense_root and root.size > 0:
            shared_root = _shared_copy(root)
            segment, base = location(shared_root)
            for i in members:
                a = arrays[i]
                out[i] = array_in(segment, base + _address(a) - _address(root), a.shape, a.strides, a.dtype)
        else:
            for i in members:
                out[i] = _shared_copy(arrays[i])
    return out


def _shared_copy(a: np.ndarray) -> np.ndarray:
    if a.size == 0:
        return empty_shared(a.shape, a.dtype)
    segment = _create(a.size * a.itemsize, get_sharing_strategy())
    new = array_in(segment, segment.data_offset, a.shape, _dense_strides(a), a.dtype)
    new[...] = a
    return new


def _dense_strides(a: np.ndarray) -> tuple[int, ...]:
    """Contiguous strides that keep ``a``'s dimension order (NumPy's order='K')."""
    order = sorted(range(a.ndim), key=lambda d: abs(a.strides[d]), reverse=True)  # outer first
    strides = [0] * a.ndim
    step = a.itemsize
    for d in reversed(order):
        strides[d] = step
        step *= a.shape[d]
    return tuple(strides)


# ---------------------------------------------------------------------------- segments
def _shm_directory() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def _map(fd: int, size: int, kind: str, key, data_offset: int) -> SharedSegment:
    segment = SharedSegment(fd, size)
    segment.kind, segment.key, segment.data_offset = kind, key, data_offset
    probe = np.ndarray((1,), np.uint8, buffer=segment)
    segment.address = _address(probe)
    del probe
    _segments[key] = segment
    return segment


def _create(nbytes: int, strategy: str) -> SharedSegment:
    with lock:
        if strategy == "file_system":
            return _create_named(nbytes)
        return _create_fd(nbytes)


def _create_fd(nbytes: int) -> SharedSegment:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("shardflow-shared-tensor", os.MFD_CLOEXEC)
    else:
        fd, path = tempfile.mkstemp(prefix="shardflow-", dir=_shm_directory())
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
        st = os.fstat(fd)
        segment = _map(fd, nbytes, "fd", ("fd", st.st_dev, st.st_ino), 0)
    except BaseException:
        os.close(fd)
        raise
    segment.fd = fd
    _own(segment, os.close, (fd,))
    return segment


def attach_fd(fd: int, key) -> SharedSegment:
    """The segment of an anonymous file whose descriptor ``fd`` this process now owns
    (received through ``DupFd``); reuses this process's mapping when it has one."""
    with lock:
        segment = _segments.get(tuple(key))
        if segment is not None:
            os.close(fd)
            return segment
        try:
            segment = _map(fd, os.fstat(fd).st_size, "fd", tuple(key), 0)
        except BaseException:
            os.close(fd)
            raise
        segment.fd = fd
        _own(segment, os.close, (fd,))
        return segment


def cached(key) -> SharedSegment | None:
    """This process's mapping of the segment ``key``, if it has one."""
    return _segments.get(tuple(key))


def _tracked(directory: str) -> bool:
    # The resource tracker unlinks with shm_unlink, i.e. names in /dev/shm (Linux).
    return directory == "/dev/shm"


def _create_named(nbytes: int) -> SharedSegment:
    import secrets  # here, not at import: every process imports this module, few share memory
    from multiprocessing import resource_tracker

    directory = _shm_directory()
    name = f"shardflow_{os.getpid()}_{next(_names)}_{secrets.token_hex(4)}"
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, HEADER + nbytes)
        os.pwrite(fd, _COUNT.pack(1), 0)  # this process's mapping
        segment = _map(fd, HEADER + nbytes, "name", ("name", name), HEADER)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        os.close(fd)
    if _tracked(directory):
        resource_tracker.register("/" + name, "shared_memory")
    _named_release(segment, name, directory)
    return segment


def _named_release(segment: SharedSegment, name: str, directory: str) -> None:
    segment.name, segment.directory = name, directory
    _own(segment, add_reference, (name, directory, -1))


# Exit order: after multiprocessing's queues have flushed (their feeder threads are joined
# at priority -5 and may still be pickling a tensor of this segment), before its temporary
# directory goes (-100). Descriptors need no closing at exit.
_EXIT_PRIORITY = {"fd": None, "name": -50}


def _own(segment: SharedSegment, release, args) -> None:
    """Run ``release(*args)`` when ``segment`` is collected (and, for a named segment, when
    this process exits), in this process only (``multiprocessing.util.Finalize`` skips
    other processes)."""
    from multiprocessing import util  # here, not at import: it pulls in socket, selectors, ...

    segment.owner_pid, segment.release = os.getpid(), (release, args)
    util.Finalize(segment, release, args=args, exitpriority=_EXIT_PRIORITY[segment.kind])
    util.register_after_fork(segment, _after_fork)


def _after_fork(segment: SharedSegment) -> None:
    # A forkserver child clears multiprocessing's finalizers after unpickling its Process
    # object, which may have attached segments in this process: register those again.
    # Segments a forked child inherited belong to its parent (another owner_pid).
    if segment.owner_pid == os.getpid():
        from multiprocessing import util

        release, args = segment.release
        util.Finalize(segment, release, args=args, exitpriority=_EXIT_PRIORITY[segment.kind])


def add_reference(name: str, directory: str, delta: int) -> int:
    """Change the reference count of the named segment by ``delta`` under its file lock;
    unlink it when the count reaches zero. Returns the new count (0 if already gone)."""
    import fcntl  # POSIX only, like the file_system strategy
    from multiprocessing import resource_tracker

    path = os.path.join(directory, name)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return _gone(name, delta)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        (count,) = _COUNT.unpack(os.pread(fd, _COUNT.size, 0))
        if count <= 0:  # another process released it to zero (and unlinked it) as we opened it
            return _gone(name, delta)
        count = max(count + delta, 0)
        os.pwrite(fd, _COUNT.pack(count), 0)
        if count == 0:
            os.unlink(path)
            if _tracked(directory):
                resource_tracker.unregister("/" + name, "shared_memory")
        return count
    finally:
        os.close(fd)  # releases the lock


def _gone(name: str, delta: int) -> int:
    if delta > 0:
        raise RuntimeError(
            f"cannot share the tensor in shared-memory segment {name!r}: it was freed (its last "
            "owning process released it; a forked child does not own its parent's segments). "
            "Keep the tensor alive in its creating process, or use the 'file_descriptor' "
            "sharing strategy")
    return 0


def attach_named(name: str, directory: str) -> SharedSegment:
    """Map the named segment a message referred to. The message carried one reference
    (``add_reference(+1)`` by its sender): it becomes this process's mapping's reference,
    or is dropped when this process maps the segment already."""
    with lock:
        segment = _segments.get(("name", name))
        if segment is not None:
            add_reference(name, directory, -1)
            return segment
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise RuntimeError(
                f"shared-memory segment {path} no longer exists, so the tensor sent through it "
                "cannot be received; was /dev/shm cleaned while processes were running?") from None
        try:
            segment = _map(fd, os.fstat(fd).st_size, "name", ("name", name), HEADER)
        finally:
            os.close(fd)
        _named_release(segment, name, directory)
        return segment
