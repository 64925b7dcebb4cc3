"""Cross-memory reads between two workers on one host (Linux ``process_vm_readv``, the
"cma" channel of PyTorch's tensorpipe): the receiver copies a large payload straight out of
the sender's memory, one copy instead of TCP's two (into the kernel's socket buffers and
out again).

How a connection comes to use it (``transport.py``): after the handshake each end sends an
authenticated control frame with its pid and the address and value of 16 random bytes in
its memory; the peer opens a pidfd of that pid (``PeerProcess``), reads those bytes with
``process_vm_readv`` and, only if they match and the process behind the pidfd is still the
one it read, answers "ok". A wrong pid (another pid namespace, another host), a kernel or
container that forbids the read (ptrace rules, seccomp) or lacks pidfds, or an older peer
leaves that direction on TCP.

Why the pidfd: a pid names a process only while it lives; a sender that dies and whose pid
is taken by another process of the same user would otherwise have that process's memory
read in its place. A read is trusted only when the pidfd says, *after* the read, that the
verified process has not exited (``PeerProcess.gone``): a live process keeps its pid.

Only ``ctypes``, ``os`` and ``select``; libc's function is looked up once, the first time
it is needed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sys

import numpy as np

_fn = None


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _readv():
    global _fn
    if _fn is None:
        _fn = False
        if sys.platform.startswith("linux") and hasattr(os, "pidfd_open"):
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
    """Whether this platform has ``process_vm_readv`` and pidfds (whether a peer may be read
    is only known by trying: ``read``)."""
    return bool(_readv())


def address(buffer) -> int:
    """The address of a contiguous buffer's first byte (bytes, memoryview, array)."""
    return np.frombuffer(buffer, np.uint8).ctypes.data


def read(pid: int, addr: int, out) -> None:
    """Fill the writable buffer ``out`` from ``addr`` in process ``pid`` (one system call
    unless the kernel returns less). OSError (with the errno) when the kernel refuses or the
    range is not mapped there."""
    f = _readv()
    if not f:
        raise OSError("process_vm_readv is not available on this platform")
    view = memoryview(out).cast("B")
    dst = address(view) if len(view) else 0
    n, pos = len(view), 0
    local, remote = _IoVec(), _IoVec()
    while pos < n:
        local.base, local.len = dst + pos, n - pos
        remote.base, remote.len = addr + pos, n - pos
        got = f(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            err = ctypes.get_errno() if got < 0 else 0
            raise OSError(err, f"process_vm_readv from pid {pid} failed: "
                               f"{os.strerror(err) if err else 'nothing read'}")
        pos += got


class PeerProcess:
    """The verified sender: its pid and a pidfd that stays bound to that process (not to
    whoever holds the pid later). ``watch`` also names a socket whose peer-closed state
    ``gone`` reports, in the same ``poll`` call."""

    def __init__(self, pid: int):
        self.pid = pid
        self.fd = os.pidfd_open(pid)   # OSError: no such process, or no pidfds here
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN)

    def watch(self, sock_fd: int) -> None:
        self._poll.register(sock_fd, select.POLLRDHUP | select.POLLHUP | select.POLLERR)

    def read(self, addr: int, out) -> None:
        read(self.pid, addr, out)

    def gone(self) -> bool:
        """Whether the process has exited (its pid may now name another) or the watched
        socket's peer has closed or reset it: one non-blocking ``poll``."""
        return bool(self._poll.poll(0))

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
