"""``PSWorker``: a worker's side of the parameter server (pull, push, heartbeats).

The worker keeps one request connection and one heartbeat connection per server. ``pull``
asks every server for its shard at the worker's clock (retrying while the server answers
``ready: false``) and writes the assembled vector into the model's parameters; ``push``
sends each server its slice of the flat gradient and advances the clock. The wire carries
host memory: parameters and gradients on a device (``device="cuda"``) are copied to the host
before they are sent, and pulled values copied back to each parameter's device. A server that
does not answer within ``timeout`` seconds (or closes the connection) raises
:class:`~.wire.PSError` naming it: a lost server is reported, never waited on forever. Each
connection first answers the server's challenge with the job's secret (``auth.py``).
"""

from __future__ import annotations

import socket
import threading
import time

import numpy as np

from ...backend import CPU, device_of, to_device
from .auth import ServerAddress, answer
from .wire import PSError, recv_msg, send_msg

__all__ = ["PSWorker", "shard_sizes"]


def shard_sizes(n: int, num_servers: int) -> list:
    """Elements of the flat parameter vector on each server (``numpy.array_split``)."""
    return [len(a) for a in np.array_split(np.empty(n, dtype=np.int8), num_servers)]


class PSWorker:
    def __init__(self, params, servers, worker_id: int, *, timeout: float = 10.0,
                 heartbeat: float = 0.5, connect_timeout: float = 30.0, secret: str | None = None):
        self.params = list(params)
        # an auth.ServerAddress carries its secret; ``secret=`` serves plain (host, port) pairs
        self.servers = [s if isinstance(s, ServerAddress) else ServerAddress(*s, secret)
                        for s in servers]
        self.worker_id, self.timeout = int(worker_id), float(timeout)
        self.clock = 0
        self.n = sum(p.array.size for p in self.params)
        self.sizes = shard_sizes(self.n, len(self.servers))
        self.req = [self._connect(i, connect_timeout) for i in range(len(self.servers))]
        self.hb = [self._connect(i, connect_timeout) for i in range(len(self.servers))]
        self._stop = threading.Event()
        self._hb_thread = threading.Thread(target=self._beat, args=(heartbeat,), daemon=True)
        self._hb_thread.start()

    def _connect(self, i, limit):
        addr = self.servers[i]
        deadline = time.monotonic() + limit
        while True:
            try:
                s = socket.create_connection(addr, timeout=self.timeout)
                s.settimeout(self.timeout)
            except OSError as e:
                if time.monotonic() > deadline:
                    raise PSError(f"worker {self.worker_id}: cannot reach parameter server {i} at "
                                  f"{addr[0]}:{addr[1]} within {limit} s ({e}); is it running?") from e
                time.sleep(0.05)
                continue
            try:
                answer(s, addr.secret, f"parameter server {i} at {addr[0]}:{addr[1]}")
            except BaseException:
                s.close()
                raise
            return s

    def _beat(self, every):
        while not self._stop.wait(every):
            for s in self.hb:
                try:
                    send_msg(s, {"op": "hb", "worker": self.worker_id})
                except OSError:
                    pass  # the request path reports a lost server

    def _call(self, i, header, array=None):
        header = {**header, "worker": self.worker_id}
        try:
            send_msg(self.req[i], header, array)
            reply, arr = recv_msg(self.req[i])
        except (OSError, ConnectionError) as e:
            host, port = self.servers[i]
            raise PSError(
                f"worker {self.worker_id}: parameter server {i} at {host}:{port} did not answer "
                f"{header['op']} within {self.timeout} s ({type(e).__name__}: {e}); the server is "
                "lost (check its log), or raise timeout= if it is only slow"
            ) from e
        if "error" in reply:
            raise PSError(reply["error"])
        return reply, arr

    # -------------------------------------------------------------- API
    def _flat(self, arrays) -> np.ndarray:
        # the socket sends host bytes: device arrays are copied to the host explicitly
        # (to_device is a no-op for NumPy arrays)
        return np.concatenate([np.asarray(to_device(a, CPU), dtype=np.float32).reshape(-1) for a in arrays])

    def _slices(self, flat):
        edges = np.cumsum([0, *self.sizes])
        return [flat[edges[i]:edges[i + 1]] for i in range(len(self.sizes))]

    def init_params(self) -> None:
        """Send this worker's parameters as the servers' initial values (the chief calls it;
        a server keeps the first init it receives)."""
        for i, part in enumerate(self._slices(self._flat(p.array for p in self.params))):
            self._call(i, {"op": "init"}, part)

    def pull(self) -> None:
        """Fetch the parameters allowed at this worker's clock into the model."""
        parts = []
        for i in range(len(self.servers)):
            while True:
                reply, arr = self._call(i, {"op": "pull", "clock": self.clock})
                if reply.get("ready"):
                    parts.append(arr)
                    break
        flat, off = np.concatenate(parts), 0
        for p in self.params:
            a = p.array
            k = a.size
            # received on the host: copied to the parameter's device (no-op on the CPU)
            a[...] = to_device(flat[off:off + k].reshape(a.shape), device_of(a))
            off += k

    def push(self, scale: float = 1.0) -> None:
        """Send the gradients times ``scale`` (zeros for parameters without one) and advance
        the clock. ``ParameterServerStrategy`` pushes ``num_workers x g`` so that the servers'
        mean is the replicas' SUM, TensorFlow's convention."""
        # a missing gradient is host zeros: _flat builds the host vector anyway
        grads = [p.grad.array if p.grad is not None else np.zeros(p.array.shape, dtype=np.float32)
                 for p in self.params]
        flat = self._flat(grads)
        if scale != 1.0:
            flat *= np.float32(scale)
        for i, part in enumerate(self._slices(flat)):
            self._call(i, {"op": "push", "clock": self.clock}, part)
        self.clock += 1

    def stats(self, server: int = 0) -> dict:
        return self._call(server, {"op": "stats"})[0]

    def close(self) -> None:
        """Tell the servers this worker is done and stop the heartbeats."""
        self._stop.set()
        for i in range(len(self.servers)):
            try:
                self._call(i, {"op": "done"})
            except PSError:
                pass
        for s in self.req + self.hb:
            s.close()
