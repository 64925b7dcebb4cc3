"""Cross-memory reads between two workers on one host (Linux ``process_vm_readv``, the
"cma" channel of PyTorch's tensorpipe): the receiver copies a large payload straight out of
the sender's memory, one copy instead of TCP's two (into the kernel's socket buffers and
out again).

How a connection comes to use it (``transport.py``): after the handshake each end sends an
authenticated control frame with its pid and the address and value of 16 random bytes in
its memory; the peer reads those bytes with ``process_vm_readv`` and, only if they match,
answers "ok". A wrong pid (another pid namespace, another host), a kernel or container that
forbids the read (ptrace rules, seccomp) or an older peer leaves that direction on TCP.

Only ``ctypes`` and libc; the function is looked up once, the first time it is needed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

import numpy as np

_fn = None
_CHUNK = 1 << 20   # read and hash 1 MiB at a time: the hash reads it while it is in cache


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _readv():
    global _fn
    if _fn is None:
        _fn = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
                f = libc.process_vm_readv
            except (OSError, AttributeError):
                return False
            f.restype = ctypes.c_ssize_t
            f.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                          ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_ulong]
            _fn = f
    return _fn


def available() -> bool:
    """Whether this platform has ``process_vm_readv`` (whether a peer may be read is only
    known by trying: ``read``)."""
    return bool(_readv())


def address(buffer) -> int:
    """The address of a contiguous buffer's first byte (bytes, memoryview, array)."""
    return np.frombuffer(buffer, np.uint8).ctypes.data


def read(pid: int, addr: int, out, update=None) -> None:
    """Fill the writable buffer ``out`` from ``addr`` in process ``pid``, 1 MiB at a time,
    calling ``update(piece)`` on each piece just read. OSError (with the errno) when the
    kernel refuses or the range is not mapped there."""
    f = _readv()
    if not f:
        raise OSError("process_vm_readv is not available on this platform")
    view = memoryview(out).cast("B")
    dst = address(view)
    n, pos = len(view), 0
    local, remote = _IoVec(), _IoVec()
    while pos < n:
        want = min(_CHUNK, n - pos)
        local.base, local.len = dst + pos, want
        remote.base, remote.len = addr + pos, want
        got = f(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            err = ctypes.get_errno() if got < 0 else 0
            raise OSError(err, f"process_vm_readv from pid {pid} failed: "
                               f"{os.strerror(err) if err else 'nothing read'}")
        if update is not None:
            update(view[pos:pos + got])
        pos += got
