"""The parameter server's wire format: a JSON header and raw buffers, never pickle.

A message is ``8-byte big-endian header length | UTF-8 JSON header | raw bytes``. The
header names the operation and its fields; when it carries an array it has ``"dtype"`` and
``"shape"`` and the raw bytes are the C-contiguous array (``nbytes`` follows from them).
Receiving never evaluates anything from the peer: the dtype must be one of ``DTYPES``
(``distributed/wire_arrays.py``, shared with RPC).
"""

from __future__ import annotations

import json
import socket
import struct

import numpy as np

from ..wire_arrays import DTYPES, WireFormatError, array_from_buffer, wire_dtype

__all__ = ["PSError", "send_msg", "recv_msg", "DTYPES"]

_LEN = struct.Struct(">Q")
_MAX_HEADER = 1 << 20


class PSError(RuntimeError):
    """A parameter-server failure: lost server or worker, protocol error."""


def send_msg(sock: socket.socket, header: dict, array=None) -> None:
    header = dict(header)
    payload = b""
    if array is not None:
        arr = np.ascontiguousarray(array)
        header["dtype"], header["shape"] = wire_dtype(arr), list(arr.shape)
        payload = memoryview(arr).cast("B")
    hb = json.dumps(header).encode()
    sock.sendall(_LEN.pack(len(hb)) + hb)
    if len(payload):
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("the peer closed the connection")
        got += k
    return buf


def recv_msg(sock: socket.socket):
    """``(header, array or None)``; raises ConnectionError when the peer closed."""
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    if n > _MAX_HEADER:
        raise PSError(f"parameter-server header of {n} bytes (limit {_MAX_HEADER}): not a shardflow peer?")
    header = json.loads(_recv_exact(sock, n).decode())
    if "dtype" not in header:
        return header, None
    if header["dtype"] not in DTYPES:
        raise PSError(f"unknown dtype {header['dtype']!r} in a parameter-server message")
    shape = tuple(int(d) for d in header["shape"])
    raw = _recv_exact(sock, int(np.prod(shape, dtype=np.int64)) * DTYPES[header["dtype"]].itemsize)
    try:
        return header, array_from_buffer(raw, header["dtype"], shape, "parameter-server message")
    except WireFormatError as e:
        raise PSError(str(e)) from None
