"""Who may talk to a parameter server: the job's secret, checked on every connection.

A server's address carries the secret that opens it (:class:`ServerAddress`, a
``(host, port)`` tuple with a ``secret`` attribute), so everything that hands addresses to
the workers hands them the secret too. The handshake, before any request:

1. the server sends ``{"op": "hello", "auth": bool, "nonce": 32 random bytes, hex}``;
2. with ``auth``, the worker answers ``{"op": "auth", "mac": HMAC-SHA256(secret, nonce)}``
   and the server compares it in constant time; a wrong or missing answer (or none within
   ``HANDSHAKE_S``) gets ``{"error": "refused: ..."}`` and the connection is closed, before
   the server reads any request;
3. the server answers ``{"ok": true}``.

The nonce is fresh per connection, so a recorded answer is worth nothing on another one.
Where the secret comes from: ``mpi_cluster`` draws one on rank 0 (``secrets.token_hex``) and
shares it over MPI, so a ``shardflow run`` job always has one; a ``TF_CONFIG`` cluster of
plain processes takes ``config["secret"]`` or ``SHARDFLOW_JOB_SECRET`` (every task the same
value). Without one, the server accepts any connection and says so when it starts.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from .wire import PSError, recv_msg, send_msg

__all__ = ["ServerAddress", "HANDSHAKE_S", "challenge", "answer", "new_secret"]

HANDSHAKE_S = 5.0  # how long a connecting peer has to prove it holds the secret


class ServerAddress(tuple):
    """``(host, port)`` of a parameter server, with the ``secret`` that opens it (None: the
    server asks for none)."""

    secret: str | None

    def __new__(cls, host: str, port: int, secret: str | None = None):
        self = super().__new__(cls, (host, int(port)))
        self.secret = secret
        return self

    def __repr__(self) -> str:  # never print the secret
        return f"ServerAddress({self[0]!r}, {self[1]}, secret={'set' if self.secret else None})"


def new_secret() -> str:
    return secrets.token_hex(32)


def _mac(secret: str, nonce: str) -> str:
    return hmac.new(secret.encode(), nonce.encode(), hashlib.sha256).hexdigest()


def challenge(conn, secret: str | None) -> None:
    """Server side, on a new connection; raises PSError (after telling the peer) to refuse."""
    nonce = secrets.token_hex(32)
    send_msg(conn, {"op": "hello", "auth": secret is not None, "nonce": nonce})
    if secret is None:
        return
    old = conn.gettimeout()
    conn.settimeout(HANDSHAKE_S)
    try:
        header, _ = recv_msg(conn)
    except (OSError, ConnectionError, ValueError) as e:
        raise PSError(f"no answer to the secret's challenge within {HANDSHAKE_S:g} s ({e})") from None
    finally:
        conn.settimeout(old)
    mac = header.get("mac") if header.get("op") == "auth" else None
    if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(secret, nonce)):
        why = ("it sent a request without the job's secret" if header.get("op") != "auth"
               else "wrong secret")
        send_msg(conn, {"error": f"refused: {why}"})
        raise PSError(f"refused: {why}")
    send_msg(conn, {"ok": True})


def answer(sock, secret: str | None, where: str) -> None:
    """Worker side, right after connecting to the server ``where`` ("server 0 at h:p")."""
    hello, _ = recv_msg(sock)
    if hello.get("op") != "hello":
        raise PSError(f"{where} did not greet as a shardflow parameter server ({hello!r})")
    if not hello.get("auth"):
        return
    if secret is None:
        raise PSError(f"{where} requires the job's secret and this worker has none: give every "
                      "task the same SHARDFLOW_JOB_SECRET (or 'secret' in the TF_CONFIG dict); "
                      "under `shardflow run` the cluster shares it by itself")
    send_msg(sock, {"op": "auth", "mac": _mac(secret, hello["nonce"])})
    reply, _ = recv_msg(sock)
    if "error" in reply:
        raise PSError(f"{where} {reply['error']}: the secrets differ between the tasks")
