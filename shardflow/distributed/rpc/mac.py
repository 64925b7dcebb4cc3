"""The MAC of one frame (``frame.py``): HMAC-SHA256 with the connection's key for the
frame's direction, over ``seq | prefix | header | P``, where ``P`` is

* the payload itself when it is shorter than ``POLY_MIN`` (256 KiB), and
* ``Poly1305(otk, payload)`` for a longer one, with the one-time key
  ``otk = HMAC-SHA256(key, "otk" | seq)``. Poly1305 is a one-time authenticator that runs
  at several GB/s (measured 4-6 GB/s here against 0.7-1.7 GB/s for SHA-256): an attacker
  who changes a payload byte must forge it under a key used for this frame only, and the
  HMAC binds its tag to the header and the sequence number. The same construction keys
  ChaCha20-Poly1305 per nonce.

Both ends decide from the payload length alone, so the format needs no flag. A payload read
from the sender's memory (``cma.py``, frame flag ``REF``) is not in the frame: its frame's
MAC covers the reference section (the addresses and lengths), not the bytes read (why that
is enough: docs/RPC.md, Security). Poly1305 comes from the ``cryptography`` package (a
dependency of shardflow), imported the first time a large frame is authenticated.
"""

from __future__ import annotations

import hashlib
import hmac

POLY_MIN = 256 << 10
_poly = None


def _poly1305():
    global _poly
    if _poly is None:
        try:
            from cryptography.hazmat.primitives.poly1305 import Poly1305
        except ImportError:  # pragma: no cover - a declared dependency
            raise ImportError(
                "shardflow RPC authenticates large messages with Poly1305 from the "
                "'cryptography' package: pip install cryptography") from None
        _poly = Poly1305
    return _poly


def one_time_key(key: bytes, seq: bytes) -> bytes:
    """The Poly1305 key of frame ``seq`` (never used for another frame)."""
    return hmac.digest(key, b"otk" + seq, "sha256")


def one_shot(key: bytes, seq: bytes, frame) -> bytes:
    """MAC of a whole small frame (payload under ``POLY_MIN``) given as one buffer."""
    return hmac.digest(key, seq + frame, "sha256")


class FrameMac:
    """Incremental MAC: made from the frame's prefix + header, fed its payload in pieces."""

    __slots__ = ("_key", "_head", "_h", "_p")

    def __init__(self, key: bytes, seq: bytes, head, payload_len: int):
        self._key = key
        if payload_len >= POLY_MIN:
            self._head = seq + bytes(head)
            self._p = _poly1305()(one_time_key(key, seq))
            self._h = None
        else:
            self._h = hmac.new(key, seq, hashlib.sha256)
            self._h.update(head)
            self._p = None

    def update(self, piece) -> None:
        if self._p is not None:
            self._p.update(piece)
        else:
            self._h.update(piece)

    def digest(self) -> bytes:
        if self._p is not None:
            return hmac.digest(self._key, self._head + self._p.finalize(), "sha256")
        return self._h.digest()
