"""Plans: what stays the same between calls of one collective with one shape.

A plan is keyed by (op, reduce op, dtype, shape, root). It holds the packed call signature
(sequence number 0, stamped per call), whether the data rides in the signature exchange
(the *small* path), and, for blocking calls, the exchange's send/receive buffers with the
NumPy views of the data inside them. Building these costs microseconds of Python per call
(allocations, views, packing), as much as a small MPI collective itself; reusing them keeps
a 1 KB all_reduce close to raw MPI. Asynchronous calls, which may overlap, get fresh
buffers.

Every rank's block in the exchange has the same size on a world of a given size, whatever
the call (:func:`block_bytes`: ``EAGER_SAFE_BYTES // world``, at least the 96-byte
signature): ``[signature | data | padding]`` on the small path, ``[signature | padding]``
on the large one. Ranks that disagree on the call (another element count, dtype, op, small
on one rank and large on another) therefore never make MPI truncate a block: the exchange
completes on every rank, every rank sees every signature and raises the same mismatch
report. (Blocks sized by the call made the smaller side's receive fail with
``MPI_ERR_TRUNCATE``: Open MPI's non-blocking schedule then aborted on that rank only and
printed its own "MPI Error in NBC subrequest" lines, a rank that forwarded blocks (3+
ranks) could leave the others waiting, the report had to read the peers' calls from the
arrival board, racing a peer that had moved on to its next collective (seen in 2 runs of 5
on 3 ranks), and the communicator was out of step afterwards.)

The small path is taken while the data fits in the block, i.e. while the whole exchange,
world x (96 + data) bytes, stays within ``EAGER_SAFE_BYTES`` (3 KB, under Open MPI's 4 KB
shared-memory eager limit with headers). The bound is kept from when blocks differed in
size (measured with Open MPI 5.0.11: truncating a message beyond the eager limit, 4.4 KB
into 3.9 KB, corrupted the receiver's heap, "malloc(): corrupted top size"): larger data is
never exchanged before the signatures matched.
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


def block_bytes(world: int) -> int:
    """Every rank's block of the signature exchange on a world of ``world`` ranks (the same
    for every call: see the module docstring)."""
    return max(H, (EAGER_SAFE_BYTES // world) & ~7)


class Plan:
    """See the module docstring."""

    __slots__ = ("sig", "small", "row", "nbytes", "dtype", "shape", "_cached")

    def __init__(self, fields, world: int, nbytes: int, dtype, shape, small_ok: bool = True):
        self.sig = callsig.PACKER.pack(*fields)
        self.nbytes = nbytes
        self.dtype = dtype
        self.shape = shape
        self.row = block_bytes(world)
        self.small = small_ok and H + pad8(nbytes) <= self.row
        self._cached = None

    def buffers(self, world: int, seq: int, fresh: bool, BYTE):
        """``(send, recv, data, rows, send_spec, recv_spec)`` with ``seq`` stamped.

        ``data`` is the send buffer's data as an array of the call's shape, ``rows`` the
        gathered data as ``(world, *shape)`` (both None on the large path).
        """
        b = None if fresh else self._cached
        if b is None:
            send = np.zeros(self.row, dtype=np.uint8)  # the padding is sent: zeros, not garbage
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
