"""The call signature: what one rank called, in 96 bytes that travel with the collective.

Every collective of the MPI backend sends its signature along with the data (see
``mpi.py``): twelve little-endian int64 fields

    op, seq, reduce op, dtype, element count, root, ndim, dims[0..4]

(``op`` is a code from :data:`OPCODES`, ``seq`` the communicator's sequence number; a shape
with more than 5 dims keeps 4 dims and the product of the rest in ``dims[4]``). The first
:data:`CHECKED_BYTES` (op .. root) decide whether MPI computes the right thing, so they
are compared on every call; the shape is compared too under ``SHARDFLOW_DEBUG=collectives``
(ranks may legitimately hold the same number of elements in different shapes).
The same 96 bytes are written to the rank's slot of the arrival board (``arrival.py``),
so a timeout report can say what every rank called.
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from typing import NamedTuple

import numpy as np

PACKER = struct.Struct("<12q")
NBYTES = PACKER.size  # 96: a multiple of 16, so data after it stays aligned
CHECKED_BYTES = 6 * 8  # op, seq, reduce op, dtype, count, root
MAX_DIMS = 5

OPCODES = {
    "all_reduce": 1, "broadcast": 2, "all_gather": 3, "reduce_scatter": 4,
    "all_to_all": 5, "barrier": 6, "all_gather_object": 7, "broadcast_object": 8,
    "send": 9, "recv": 10, "new_group": 11,
}
OPNAMES = {v: k for k, v in OPCODES.items()}
REDUCE_CODES = {None: 0, "sum": 1, "avg": 2, "prod": 3, "max": 4, "min": 5, "band": 6, "bor": 7,
                "bxor": 8}
REDUCE_NAMES = {v: k for k, v in REDUCE_CODES.items()}

_DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                "uint8", "bool", "uint16", "uint32", "uint64", "complex64", "complex128")
_NAME_CODES = {name: i + 1 for i, name in enumerate(_DTYPE_NAMES)}
_CODE_NAMES = {i + 1: name for i, name in enumerate(_DTYPE_NAMES)}
_dtype_cache: dict = {}


def dtype_code(dt) -> int:
    """A small stable integer for a dtype (0 for None); cached, so cheap on the hot path."""
    code = _dtype_cache.get(dt)
    if code is None:
        if dt is None:
            code = 0
        else:
            name = np.dtype(dt).name
            code = _NAME_CODES.get(name) or (1000 + (zlib.crc32(name.encode()) & 0xFFFFFF))
        _dtype_cache[dt] = code
    return code


def dtype_name(code: int) -> str:
    return _CODE_NAMES.get(int(code), f"dtype#{int(code)}")


_ITEMSIZES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
              "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "uint16": 2, "uint32": 4,
              "uint64": 8, "complex64": 8, "complex128": 16}


def dtype_itemsize(code: int) -> int | None:
    """Bytes per element of a dtype code (None for a dtype outside the table)."""
    return _ITEMSIZES.get(_CODE_NAMES.get(int(code), ""))


def fields(op: str, seq: int, reduce: str | None, dtype, count: int, root: int, shape) -> tuple:
    """The twelve int64 fields of a call (see the module docstring)."""
    nd = len(shape)
    if nd <= MAX_DIMS:
        dims = (*shape, *(0,) * (MAX_DIMS - nd))
    else:
        rest = 1
        for d in shape[MAX_DIMS - 1:]:
            rest *= int(d)
        dims = (*shape[:MAX_DIMS - 1], rest)
    return (OPCODES[op], seq, REDUCE_CODES[reduce], dtype_code(dtype), count, root, nd, *dims)


class CallSig(NamedTuple):
    """A decoded signature."""

    op: int
    seq: int
    reduce: int
    dtype: int
    count: int
    root: int
    ndim: int
    dims: tuple

    @classmethod
    def unpack(cls, buf, offset: int = 0) -> CallSig:
        f = PACKER.unpack_from(buf, offset)
        return cls(*f[:7], tuple(f[7:]))

    @property
    def op_name(self) -> str:
        return OPNAMES.get(self.op, f"op#{self.op}")

    def shape_text(self) -> str:
        nd = self.ndim
        if nd <= MAX_DIMS:
            dims = self.dims[:nd]
            return "(" + ", ".join(str(d) for d in dims) + ("," if nd == 1 else "") + ")"
        return "(" + ", ".join(str(d) for d in self.dims[:MAX_DIMS - 1]) + f", ... {nd} dims)"

    def describe(self) -> str:
        """``all_reduce(shape=(3, 4), dtype=float32, op=sum)`` (the root for rooted ops)."""
        name = self.op_name
        if name == "barrier":
            return "barrier()"
        if name == "new_group":  # the ranks ride in the dims (the first 4 when more than 5)
            shown = self.dims[:self.ndim] if self.ndim <= MAX_DIMS else self.dims[:MAX_DIMS - 1]
            more = ", ..." if self.ndim > MAX_DIMS else ""
            return f"new_group(ranks=[{', '.join(map(str, shown))}{more}])"
        if name.endswith("_object"):
            text = f"{name}({self.dims[0]} pickled bytes"
        else:
            text = f"{name}(shape={self.shape_text()}, dtype={dtype_name(self.dtype)}"
        if self.reduce:
            text += f", op={REDUCE_NAMES.get(self.reduce, self.reduce)}"
        # a send/recv's root field is the caller's own world rank (its message says who the
        # caller is); shown as "peer=" it named the sender as the destination
        if self.root >= 0 and name not in ("send", "recv"):
            text += f", root={self.root}"
        return text + ")"


def mismatch_lines(sigs: list[CallSig | None], world_ranks: list[int], nbytes: int) -> list[str]:
    """One line per rank, ``rank R: call``, marking the ranks that differ from the majority.

    ``nbytes`` is how much of the signature was compared (:data:`CHECKED_BYTES` or all of it).
    """
    nf = nbytes // 8

    def key(s):
        return None if s is None else (s.op, s.seq, s.reduce, s.dtype, s.count, s.root, s.ndim,
                                       *s.dims)[:nf]

    ranked = Counter(key(s) for s in sigs).most_common(2)
    # mark the odd ones out only where there is a strict majority (2 ranks: nobody is "right")
    marked = len(ranked) > 1 and ranked[0][1] > ranked[1][1]
    common = ranked[0][0]
    lines = []
    for r, s in enumerate(sigs):
        if s is None:
            lines.append(f"rank {world_ranks[r]}: unknown (its signature did not arrive)")
            continue
        mark = "   <- differs" if marked and key(s) != common else ""
        lines.append(f"rank {world_ranks[r]}: {s.describe()} as collective #{s.seq}{mark}")
    return lines


def root_hint(sigs: list[CallSig | None]) -> str:
    """The fix, when the ranks made the same all-reduce / all-gather with different roots:
    those are ``dist.reduce`` / ``dist.gather`` (their ``dst`` rides in the root field)."""
    if any(s is None for s in sigs):
        return ""
    ops = {s.op_name for s in sigs}
    roots = {s.root for s in sigs}
    if len(ops) != 1 or len(roots) < 2 or not ops <= {"all_reduce", "all_gather"}:
        return ""
    rooted = "reduce" if ops == {"all_reduce"} else "gather"
    return (f" The root is dist.{rooted}'s dst (as a group rank): the ranks passed different "
            f"destinations; pass the same dst on every rank.")
