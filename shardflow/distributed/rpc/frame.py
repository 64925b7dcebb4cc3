"""RPC's message format (version 2): a fixed prefix, a JSON header, raw buffers, a MAC.

::

    prefix   20 bytes  ">4sBBHIQ": magic b"SFRP", version 2, flags, reserved 0,
                       header length (bytes), payload length (bytes)
    header   JSON (UTF-8): the message (kind, request id, function name, encoded arguments,
             see ``codec.py``) and ``"b"``: one ``[dtype, shape, offset]`` per buffer
    payload  the buffers back to back, each at a 64-byte aligned offset (zero padding), so
             that every tensor is received straight into its final memory and is an
             aligned view of it (no copy beyond the socket's)
    mac      32 bytes: HMAC-SHA256 over (sequence number | prefix | header | payload), with
             the connection's key for this direction (``secret.py``); the sequence number
             (8 bytes, counting this direction's frames from 0) is not sent: both ends count

Flags: ``FLAG_CTL``, a transport control frame (``transport.py``: the same-host probe and
read receipts), never given to the agent; ``FLAG_REF``, the payload is not in the frame but
read by the receiver from the sender's memory (``cma.py``): what follows the header is the
reference section ``REF`` (payload length, number of segments) and one ``SEG`` (address in
the sender, length) per piece of the payload (padding included); the MAC covers it like any
payload. (Version 1 also carried a Poly1305 tag of the payload here: see docs/RPC.md,
Security, for why version 2 does not hash a payload read from the sender's memory.)

The receiver reads the prefix, refuses a wrong magic or version and sizes over the limits,
reads the rest, and verifies the MAC *before* it parses the header: nothing an
unauthenticated peer sends is ever interpreted. Buffers are described by dtype names from a
fixed list (``distributed/wire_arrays.py``); nothing is unpickled.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np

from ..wire_arrays import DTYPES, WireFormatError, array_from_buffer
from .secret import MAGIC, VERSION

PREFIX = struct.Struct(">4sBBHIQ")
SEQ = struct.Struct(">Q")
MAC_LEN = 32
ALIGN = 64
MAX_HEADER = 64 << 20
MAX_PAYLOAD = 1 << 40
_ZEROS = bytes(ALIGN)
FLAG_REF = 1
FLAG_CTL = 2
REF = struct.Struct(">QI")      # payload length, segments
SEG = struct.Struct(">QQ")      # address in the sender, length
MAX_SEGS = 1 << 16
_JSON_OUT = json.JSONEncoder(separators=(",", ":"))   # made once: json.dumps with options
_JSON_IN = json.JSONDecoder()                          # builds an encoder per call


def layout(arrays) -> tuple[list[int], int]:
    """Aligned payload offsets of ``arrays`` and the payload length."""
    offsets, end = [], 0
    for a in arrays:
        end = -(-end // ALIGN) * ALIGN
        offsets.append(end)
        end += a.nbytes
    return offsets, end


def encode_header(header: dict) -> bytes:
    return _JSON_OUT.encode(header).encode()


def parts(header_bytes: bytes, arrays, offsets, payload_len: int) -> list:
    """The byte pieces of a frame (without the MAC), in order, each sent as is (no copy of
    the arrays: memoryviews of them)."""
    out = [PREFIX.pack(MAGIC, VERSION, 0, 0, len(header_bytes), payload_len) + header_bytes]
    pos = 0
    for a, off in zip(arrays, offsets):
        if off > pos:
            out.append(_ZEROS[: off - pos])
        if a.nbytes:
            out.append(memoryview(a.reshape(-1).view(np.uint8)))  # any dtype, bfloat16 too
        pos = off + a.nbytes
    return out


def ref_section(length: int, segments) -> bytes:
    """The reference section of a ``FLAG_REF`` frame."""
    return REF.pack(length, len(segments)) + b"".join(SEG.pack(a, n) for a, n in segments)


def parse_ref(raw) -> tuple[int, list]:
    """``(payload length, [(address, length), ...])`` of a reference section;
    WireFormatError when it is malformed or its lengths disagree."""
    raw = bytes(raw)
    if len(raw) < REF.size:
        raise WireFormatError("malformed RPC reference section (too short)")
    length, count = REF.unpack_from(raw)
    if count > MAX_SEGS or len(raw) != REF.size + count * SEG.size or length > MAX_PAYLOAD:
        raise WireFormatError(f"malformed RPC reference section ({count} segments in {len(raw)} bytes)")
    segs = [SEG.unpack_from(raw, REF.size + i * SEG.size) for i in range(count)]
    if sum(n for _, n in segs) != length:
        raise WireFormatError("malformed RPC reference section (segment lengths do not add up)")
    return length, segs


def parse_prefix(raw) -> tuple[int, int]:
    """``(header length, payload length)``; WireFormatError for anything that is not a
    shardflow RPC frame of this version within the limits."""
    magic, version, _flags, _res, hlen, plen = PREFIX.unpack(raw)
    if magic != MAGIC:
        raise WireFormatError(f"not a shardflow RPC frame (magic {magic!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise WireFormatError(
            f"RPC frame version {version}, this worker speaks version {VERSION}: run the same "
            "shardflow version on every worker")
    if hlen > MAX_HEADER or plen > MAX_PAYLOAD:
        raise WireFormatError(f"RPC frame sizes out of range (header {hlen}, payload {plen} bytes)")
    return hlen, plen


def parse_header(raw) -> dict:
    try:
        header = _JSON_IN.decode(str(raw, "utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError) as e:
        raise WireFormatError(f"malformed RPC header: {e}") from None
    if not isinstance(header, dict):
        raise WireFormatError("malformed RPC header: not a JSON object")
    return header


def buffers(header: dict, payload) -> list[np.ndarray]:
    """The arrays the header's ``"b"`` table describes, as views of ``payload``."""
    table = header.get("b", ())
    if not isinstance(table, list):
        raise WireFormatError("malformed RPC header: 'b' is not a list")
    n = 0 if payload is None else payload.nbytes
    out = []
    for entry in table:
        try:
            dtype, shape, off = entry[0], entry[1], entry[2]
            off = int(off)
            size = math.prod([int(d) for d in shape])
        except (TypeError, ValueError, IndexError, KeyError):
            raise WireFormatError(f"malformed buffer entry {entry!r} in an RPC header") from None
        if dtype not in DTYPES:
            raise WireFormatError(f"unknown dtype {dtype!r} in an RPC message")
        end = off + size * DTYPES[dtype].itemsize
        if off < 0 or end > n:
            raise WireFormatError(f"buffer [{off}, {end}) outside the {n}-byte payload")
        out.append(array_from_buffer(payload[off:end], dtype, shape, "RPC message"))
    return out
