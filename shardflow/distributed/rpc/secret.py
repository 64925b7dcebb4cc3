"""The job's secret and the connection handshake that proves both ends hold it.

Where the secret comes from: ``SHARDFLOW_RPC_SECRET`` (``shardflow run`` generates a fresh
one per job and hands it to every rank; pass your own to plain processes), else the
per-user secret file (``SHARDFLOW_RPC_SECRET_FILE``, default ``~/.shardflow/rpc_secret``,
created with mode 0600 on first use, like Erlang's cookie): processes of one user on one
machine, or on machines sharing the home directory, then agree without configuration.
The secret never travels.

Handshake (the first bytes of every connection, before any frame):

1. client -> server: ``HELLO`` = magic ``SFRP``, version byte, client nonce (32 bytes);
2. server -> client: server nonce (32 bytes) and
   ``HMAC(secret, "server" | client nonce | server nonce)``: the server proves the secret;
3. client -> server: ``HMAC(secret, "client" | server nonce | client nonce)`` and its
   worker id (4 bytes, -1 before it has one): the client proves the secret.

Either side that sees a wrong proof says why in one line to the peer (the server's
refusal), logs it and closes: nothing from an unproven peer is parsed. Both sides then
derive one key per direction, ``HMAC(secret, "c2s"|"s2c" | client nonce | server nonce)``,
that authenticates every frame (``frame.py``): fresh nonces make a recorded frame useless on
another connection, and the per-direction sequence number inside the MAC makes it useless
a second time on the same one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct

from ... import _config
from .errors import RPCAuthError

MAGIC = b"SFRP"
VERSION = 2   # 2: the reference section of a FLAG_REF frame carries no payload tag
NONCE_LEN = 32
MAC_LEN = 32
HELLO = struct.Struct(">4sB32s")          # magic, version, client nonce
CHALLENGE = struct.Struct(">32s32s")      # server nonce, server proof
ANSWER = struct.Struct(">32si")           # client proof, client worker id
REFUSED = b"SFRP-REFUSED"                 # the server's refusal line starts with this


def job_secret() -> bytes:
    """The job's secret as a 32-byte key (see the module docstring for where it comes from)."""
    raw = _config.rpc_secret()
    if raw is None:
        raw = _secret_from_file(_config.rpc_secret_file())
    return hashlib.sha256(b"shardflow-rpc-secret\0" + raw.encode()).digest()


def _secret_from_file(path: str) -> str:
    """Read the per-user secret file, creating it (0600, atomically) when absent."""
    try:
        with open(path) as f:
            value = f.read().strip()
    except FileNotFoundError:
        value = ""
    if value:
        return value
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    try:
        os.link(tmp, path)  # atomic, and fails if another process created it first
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    with open(path) as f:
        value = f.read().strip()
    if not value:
        raise RPCAuthError(f"the RPC secret file {path} is empty; delete it or set SHARDFLOW_RPC_SECRET")
    return value


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_LEN)


def proof(key: bytes, role: bytes, first: bytes, second: bytes) -> bytes:
    return hmac.new(key, role + b"|" + first + second, hashlib.sha256).digest()


def session_keys(key: bytes, client_nonce: bytes, server_nonce: bytes) -> tuple[bytes, bytes]:
    """``(client->server key, server->client key)``."""
    return (proof(key, b"c2s", client_nonce, server_nonce),
            proof(key, b"s2c", client_nonce, server_nonce))


def same(a, b) -> bool:
    return hmac.compare_digest(bytes(a), bytes(b))
