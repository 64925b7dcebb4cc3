"""Plans: what stays the same between calls of one collective with one shape.

A plan is keyed by (op, reduce op, dtype, shape, root). It holds the packed call signature
(sequence number 0, stamped per call), whether the data rides in the signature exchange
(the *small* path), and, for blocking calls, the exchange's send/receive buffers with the
NumPy views of the data inside them. Building these costs microseconds of Python per call
(allocations, views, packing), as much as a small MPI collective itself; reusing them keeps
a 1 KB all_reduce close to raw MPI. Asynchronous calls, which may overlap, get fresh
buffers.

The small path is taken while the whole exchange, world x (96 + data) bytes, stays within
``EAGER_SAFE_BYTES`` (3 KB, under Open MPI's 4 KB shared-memory eager limit with headers):
if the ranks disagree on a size, MPI can then only truncate an eager message, which it
reports cleanly. Measured with Open MPI 5.0.11: truncating a larger message (4.4 KB into
3.9 KB, 40 KB into 32 KB) corrupts the receiver's heap ("malloc(): corrupted top size"),
so larger data is never exchanged before the signatures matched.
"""

from __future__ import annotations

import struct

import numpy as np

from . import callsig

EAGER_SAFE_BYTES = 3072
H = callsig.NBYTES
SEQ = struct.Struct("<q")  # the sequence number, at byte 8 of a signature
MAX_PLANS = 256


def pad8(n: int) -> int:
    return (n + 7) & ~7


class Plan:
    """See the module docstring."""

    __slots__ = ("sig", "small", "row", "nbytes", "dtype", "shape", "_cached")

    def __init__(self, fields, world: int, nbytes: int, dtype, shape, small_ok: bool = True):
        self.sig = callsig.PACKER.pack(*fields)
        self.nbytes = nbytes
        self.dtype = dtype
        self.shape = shape
        self.small = small_ok and world * (H + pad8(nbytes)) <= EAGER_SAFE_BYTES
        self.row = H + (pad8(nbytes) if self.small else 0)
        self._cached = None

    def buffers(self, world: int, seq: int, fresh: bool, BYTE):
        """``(send, recv, data, rows, send_spec, recv_spec)`` with ``seq`` stamped.

        ``data`` is the send buffer's data as an array of the call's shape, ``rows`` the
        gathered data as ``(world, *shape)`` (both None on the large path).
        """
        b = None if fresh else self._cached
        if b is None:
            send = np.empty(self.row, dtype=np.uint8)
            send[:H] = np.frombuffer(self.sig, dtype=np.uint8)
            recv = np.empty((world, self.row), dtype=np.uint8)
            data = rows = None
            if self.small and self.dtype is not None:
                data = send[H:H + self.nbytes].view(self.dtype).reshape(self.shape)
                rows = recv[:, H:H + self.nbytes].view(self.dtype).reshape((world, *self.shape))
            b = (send, recv, data, rows, [send, BYTE], [recv, BYTE])
            if not fresh:
                self._cached = b
        SEQ.pack_into(b[0], 8, seq)
        return b
