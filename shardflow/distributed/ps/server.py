"""``ParameterServer``: one server's shard of the flat parameter vector, its updates, and
the heartbeat watch over the workers.

The model's parameters, flattened in ``model.parameters()`` order, form one float32 vector
split across the servers by ``numpy.array_split`` (``torch.chunk``'s sizes for an even
split): as a placement, the parameters are ``Split(0)`` over the server sub-mesh, the
workers hold ``Broadcast`` copies, and their gradients are ``Partial`` sums that the servers
reduce. The update (``optim.py``) is SGD, ``shard -= lr * mean_gradient``, or Adam with its
moments kept next to the shard (``optimizer="adam"``).

* ``mode="sync"``: the gradients of clock ``c`` from every live worker are averaged and
  applied at once; a pull for clock ``c`` waits until round ``c`` is applied (DDP's result).
* ``mode="async"`` with ``staleness=s`` (stale synchronous parallel): every push is applied
  as one step with ``lr / num_workers`` (SGD: ``lr * g / num_workers``); a worker at clock
  ``c`` may pull only when every live worker has pushed at least ``c - s`` gradients. A push
  of clock ``c`` is applied once every live worker has pulled at clock ``>= c - s``
  (``_release_held``; the pusher never waits), so a pull at clock ``c`` sees every push of
  clock ``< c - s`` and none of clock ``>= c + s``. ``s = 0`` is lock-step: with SGD equal to
  sync up to the order of the additions, whatever the timing (Adam steps once per push, so
  it differs); larger ``s`` lets fast workers run ahead.

Failure handling (one thread per connection plus a watch thread):

* a worker whose last message (requests or its heartbeat thread's beats) is older than
  ``worker_timeout`` seconds is lost (``start_timeout`` before its first message, so a
  slow start is not a loss): under ``on_worker_loss="continue"`` (default for
  async) it leaves the live set and the run goes on (logged on stderr); under ``"fail"``
  (default for sync) every later request gets an error that the workers raise;
* pulls are answered within ``poll`` seconds (``{"ready": false}`` when the data is not
  there yet), so a worker that hears nothing for its timeout knows the server is gone.

The server ends when every worker has said ``done`` or been lost.

Every connection first proves it holds the job's secret (``auth.py``; refused and closed
otherwise, before any request is read).
"""

from __future__ import annotations

import socket
import sys
import threading
import time

import numpy as np

from . import auth
from .optim import make_shard_optimizer
from .wire import PSError, recv_msg, send_msg


def _peer(conn) -> str:
    try:
        host, port = conn.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "a peer that left"

__all__ = ["ParameterServer"]


class ParameterServer:
    def __init__(self, server_id: int, num_workers: int, *, lr: float, mode: str = "sync",
                 staleness: int = 0, worker_timeout: float = 5.0, on_worker_loss: str | None = None,
                 host: str = "127.0.0.1", port: int = 0, poll: float = 0.5,
                 start_timeout: float = 60.0, optimizer: str = "sgd", betas=(0.9, 0.999),
                 eps: float = 1e-8, secret: str | None = None):
        if mode not in ("sync", "async"):
            raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
        if staleness < 0:
            raise ValueError(f"staleness must be >= 0, got {staleness}")
        on_worker_loss = on_worker_loss or ("fail" if mode == "sync" else "continue")
        if on_worker_loss not in ("fail", "continue"):
            raise ValueError(f"on_worker_loss must be 'fail' or 'continue', got {on_worker_loss!r}")
        self.opt = make_shard_optimizer(optimizer, lr, betas, eps)
        self.server_id, self.num_workers, self.lr = server_id, num_workers, float(lr)
        self.mode, self.staleness, self.on_worker_loss = mode, int(staleness), on_worker_loss
        self.worker_timeout, self.poll = float(worker_timeout), float(poll)
        self.start_timeout = float(start_timeout)  # for a worker not heard from yet
        self.seen: set = set()
        self.shard = None
        self.version = 0  # sync rounds applied
        self.updates = 0  # gradients applied
        self.clock = dict.fromkeys(range(num_workers), 0)
        now = time.monotonic()
        self.last_seen = dict.fromkeys(range(num_workers), now)
        self.live, self.done, self.lost = set(range(num_workers)), set(), []
        self.pending: dict = {}  # sync: clock -> {worker: gradient}
        self.held: list = []  # async: (clock, gradient) not applied yet, in arrival order
        self.pulled = dict.fromkeys(range(num_workers), -1)  # highest clock each worker pulled
        self.failed = None
        self.cv = threading.Condition()
        self.sock = socket.create_server((host, port))
        self.address = self.sock.getsockname()[:2]
        self.secret = secret  # who may connect (auth.py); require_secret sets it later
        self.refused = 0  # connections refused for want of the secret

    # -------------------------------------------------------------- serving
    def require_secret(self, secret: str | None) -> None:
        """Refuse every connection that does not prove it holds ``secret`` (``auth.py``)."""
        self.secret = secret

    def serve(self) -> dict:
        """Serve until every worker is done or lost; returns the final stats."""
        if self.secret is None and not self.address[0].startswith("127."):
            self._log(f"listening on {self.address[0]}:{self.address[1]} without a secret: anyone "
                      "who reaches it can push gradients; give every task the same "
                      "SHARDFLOW_JOB_SECRET")
        self.sock.settimeout(0.2)
        threading.Thread(target=self._watch, daemon=True).start()
        while True:
            with self.cv:
                if not self.live:
                    break
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()
        self.sock.close()
        return self.stats()

    def stats(self) -> dict:
        return {"server": self.server_id, "version": self.version, "updates": self.updates,
                "refused": self.refused,
                "clocks": dict(self.clock), "done": sorted(self.done), "lost": list(self.lost),
                "failed": self.failed, **self.opt.config()}

    def _log(self, msg: str) -> None:
        print(f"shardflow ps: server {self.server_id}: {msg}", file=sys.stderr, flush=True)

    def _watch(self) -> None:
        while True:
            time.sleep(min(0.1, self.worker_timeout / 4))
            with self.cv:
                if not self.live:
                    return
                now = time.monotonic()
                for w in sorted(self.live):
                    limit = self.worker_timeout if w in self.seen else self.start_timeout
                    if now - self.last_seen[w] > limit:
                        self._lose(w, now - self.last_seen[w])

    def _lose(self, w: int, silent: float) -> None:
        self.live.discard(w)
        self.lost.append(w)
        if self.on_worker_loss == "fail":
            self.failed = (f"parameter server {self.server_id}: worker {w} sent nothing for "
                           f"{silent:.1f} s (worker_timeout {self.worker_timeout} s) and "
                           "on_worker_loss='fail' (the default for mode='sync'); pass "
                           "on_worker_loss='continue' to go on with the other workers")
            self._log(self.failed)
        else:
            self._log(f"worker {w} lost (no message for {silent:.1f} s); continuing with workers "
                      f"{sorted(self.live)}")
            self._maybe_apply_sync()
        self.cv.notify_all()

    def _connection(self, conn) -> None:
        try:
            auth.challenge(conn, self.secret)
        except (PSError, ConnectionError, OSError) as e:
            with self.cv:
                self.refused += 1
            self._log(f"refused a connection from {_peer(conn)}: {e}")
            conn.close()
            return
        try:
            while True:
                header, arr = recv_msg(conn)
                reply = self._handle(header, arr)
                if reply is not None:
                    send_msg(conn, *reply)
        except (ConnectionError, OSError):
            pass
        finally:
            conn.close()

    # -------------------------------------------------------------- requests
    def _handle(self, h: dict, arr):
        op, w = h.get("op"), h.get("worker")
        with self.cv:
            if w is not None and w in self.live:
                self.last_seen[w] = time.monotonic()
                self.seen.add(w)
            if op == "hb":
                return None
            if self.failed:
                return {"error": self.failed}, None
            if op == "init":
                if self.shard is None:
                    self.shard = np.array(arr, dtype=np.float32)
                    self.cv.notify_all()
                return {"ok": True}, None
            if op == "pull":
                return self._pull(w, int(h["clock"]))
            if op == "push":
                return self._push(w, int(h["clock"]), arr)
            if op == "done":
                self.live.discard(w)
                self.done.add(w)
                self._maybe_apply_sync()
                self.cv.notify_all()
                return {"ok": True}, None
            if op == "stats":
                return {"ok": True, **self.stats()}, None
        return {"error": f"unknown parameter-server operation {op!r}"}, None

    def _ready(self, clock: int) -> bool:
        if self.shard is None:
            return False
        if self.mode == "sync":
            return self.version >= clock
        others = [self.clock[v] for v in self.live]
        return not others or min(others) >= clock - self.staleness

    def _pull(self, w, clock):
        deadline = time.monotonic() + self.poll
        while not self._ready(clock) and not self.failed:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"ready": False}, None
            self.cv.wait(left)
        if self.failed:
            return {"error": self.failed}, None
        snapshot = self.shard.copy()
        self.pulled[w] = max(self.pulled[w], clock)
        self._release_held()
        return {"ready": True, "version": self.version}, snapshot

    def _push(self, w, clock, grad):
        if grad.shape != self.shard.shape:
            return {"error": f"push of shape {grad.shape} to a shard of shape {self.shard.shape}"}, None
        if self.mode == "async":
            self.held.append((clock, grad))  # its own buffer (wire.recv_msg), not reused
            self._release_held()
        else:
            self.pending.setdefault(clock, {})[w] = np.array(grad)
            self._maybe_apply_sync()
        self.clock[w] = clock + 1
        self.cv.notify_all()
        return {"ok": True}, None

    def _release_held(self) -> None:
        """Async: apply the held pushes of clock ``c`` once every live worker has pulled at
        clock ``>= c - staleness``. A pull never waits for this (clocks advance on arrival),
        but a pull at clock ``c`` then never sees another worker's push of clock ``>= c +
        staleness``: with ``staleness=0`` every worker computes step ``c`` on the same
        parameters, as in sync (otherwise a fast worker's step-``c`` push could reach a slow
        worker's step-``c`` pull, timing-dependent)."""
        floor = min((self.pulled[v] for v in self.live), default=None)
        keep = []
        for clock, grad in self.held:
            if floor is None or clock - self.staleness <= floor:
                self.opt.step(self.shard, grad, 1.0 / self.num_workers)
                self.updates += 1
            else:
                keep.append((clock, grad))
        self.held = keep

    def _maybe_apply_sync(self) -> None:
        if self.mode != "sync":
            self._release_held()
            return
        got = self.pending.get(self.version)
        if got and set(got) >= self.live:
            grads = [got[k] for k in sorted(got)]
            self.opt.step(self.shard, (np.sum(grads, axis=0) / len(grads)).astype(np.float32))
            self.updates += len(grads)
            del self.pending[self.version]
            self.version += 1
