"""torch.distributed's key-value stores: ``Store``, ``HashStore``, ``FileStore``,
``TCPStore``, ``PrefixStore`` (layer L6).

One design for all: a store runs named *commands* (``set``, ``get``, ``add``, ``check``,
``delete_key``, ``num_keys``, ``compare_set``, ``append``, ``multi_get``, ``multi_set``;
pure functions on a ``dict[str, str]``) on a *table*, after waiting until the keys the
command needs exist (bounded by the store's timeout). Values are bytes, kept as latin-1 text
so that the same table serialises to JSON for a file or a socket.

- ``HashStore``: an in-process table (a dict and a condition variable).
- ``FileStore(file_name, world_size)``: the table is a JSON file; every command holds an
  exclusive ``flock`` on it while it reads, applies and rewrites it, so processes on one host
  share it; waits poll every 10 ms.
- ``TCPStore(host_name, port, world_size, is_master, timeout, wait_for_workers)``: the master
  process runs a small server on a thread (one thread per client connection; length-prefixed
  JSON frames, never pickle) over an in-process table; every store, the master's too, is a
  client of it. Each new store adds 1 to the key ``init/``; with ``wait_for_workers`` the
  master waits until ``world_size`` stores have joined, as torch.
- ``PrefixStore(prefix, store)``: ``prefix + "/"`` before every key.

Timeouts raise :class:`DistStoreError` (a ``RuntimeError``) with torch's text; a master that
cannot be reached raises :class:`DistNetworkError` once the timeout has passed, and so does a
master whose port is taken (torch's "The server socket has failed to listen ..." and the fix;
it was the bare ``OSError``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import struct
import threading
import time
from datetime import timedelta

from .errors import DistNetworkError, DistStoreError

__all__ = ["Store", "HashStore", "FileStore", "TCPStore", "PrefixStore"]

DEFAULT_STORE_TIMEOUT = timedelta(seconds=300)  # torch's default for every store


# -- commands: pure functions on the table (dict of key -> latin-1 text) ------------------------

def _add(d, key, amount):
    cur = d.get(key, "0")
    try:
        new = int(cur) + int(amount)
    except ValueError:
        raise ValueError(f"Store.add({key!r}, {amount}): the key holds {cur!r}, which is not an "
                         "integer; use a key that only add() writes") from None
    d[key] = str(new)
    return new


def _compare_set(d, key, expected, desired):
    if key not in d:  # torch: a missing key is set only when expected is empty
        if expected == "":
            d[key] = desired
            return desired
        return expected
    if d[key] == expected:
        d[key] = desired
    return d[key]


def _multi_set(d, keys, values):
    d.update(zip(keys, values))


def _append(d, key, value):
    d[key] = d.get(key, "") + value


_COMMANDS = {
    "set": lambda d, key, value: d.__setitem__(key, value),
    "get": lambda d, key: d[key],
    "add": _add,
    "check": lambda d, keys: all(k in d for k in keys),
    "delete_key": lambda d, key: d.pop(key, None) is not None,
    "num_keys": len,
    "compare_set": _compare_set,
    "append": _append,
    "multi_get": lambda d, keys: [d[k] for k in keys],
    "multi_set": _multi_set,
}
_READ_ONLY = {"get", "check", "num_keys", "multi_get"}


class _Timeout(Exception):
    """The keys did not all appear in time (turned into DistStoreError by the store)."""


class _MemoryTable:
    """A dict and a condition variable: waits sleep until a command changes the table."""

    def __init__(self):
        self._data: dict[str, str] = {}
        self._cond = threading.Condition()

    def run(self, cmd: str, args: list, wait_keys: list, timeout_s: float):
        with self._cond:
            if not self._cond.wait_for(lambda: all(k in self._data for k in wait_keys),
                                       timeout_s):
                raise _Timeout
            out = _COMMANDS[cmd](self._data, *args)
            if cmd not in _READ_ONLY:
                self._cond.notify_all()
            return out


class _FileTable:
    """The table as a JSON file, read and rewritten under an exclusive flock per command."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "a"):  # create it if missing; contents untouched
            pass

    def run(self, cmd: str, args: list, wait_keys: list, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while True:
            with open(self.path, "r+", encoding="utf-8") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                text = f.read()
                data = json.loads(text) if text else {}
                if all(k in data for k in wait_keys):
                    out = _COMMANDS[cmd](data, *args)
                    if cmd not in _READ_ONLY:
                        f.seek(0)
                        f.truncate()
                        f.write(json.dumps(data))
                        f.flush()
                    return out
            if time.monotonic() >= deadline:
                raise _Timeout
            time.sleep(0.01)


def _bytes(value) -> str:
    """A str or bytes value as the table's latin-1 text (str is encoded as UTF-8, as torch)."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"store values are str or bytes, got {type(value).__name__}; "
                        "encode it first (e.g. str(x) or pickle.dumps(x))")
    return bytes(value).decode("latin-1")


def _out(text: str) -> bytes:
    return text.encode("latin-1")


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class Store:
    """torch.distributed's Store: a key-value store shared by the processes of a job.

    Subclasses provide ``_table`` (something with ``run(cmd, args, wait_keys, timeout_s)``)
    and may reword the timeout error (``_timeout_error``).
    """

    def __init__(self, timeout: timedelta = DEFAULT_STORE_TIMEOUT):
        self._timeout = timeout if isinstance(timeout, timedelta) else timedelta(seconds=timeout)

    @property
    def timeout(self) -> timedelta:
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        self._timeout = timeout if isinstance(timeout, timedelta) else timedelta(seconds=timeout)

    def _timeout_error(self, op: str, keys: list, timeout_s: float) -> DistStoreError:
        return DistStoreError("Wait timeout")

    def _run(self, cmd, args=(), wait_keys=(), timeout=None, op=None):
        t = _seconds(self._timeout if timeout is None else timeout)
        try:
            return self._table.run(cmd, list(args), list(wait_keys), t)
        except _Timeout:
            raise self._timeout_error(op or cmd, list(wait_keys), t) from None

    def set(self, key: str, value) -> None:
        self._run("set", (key, _bytes(value)))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting (up to the store's timeout) until it is set."""
        return _out(self._run("get", (key,), (key,)))

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer at ``key`` (0 when missing); returns the new value."""
        return int(self._run("add", (key, int(amount))))

    def append(self, key: str, value) -> None:
        self._run("append", (key, _bytes(value)))

    def check(self, keys: list) -> bool:
        """True when every key of ``keys`` is set (no waiting)."""
        return bool(self._run("check", (list(keys),)))

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        """Wait until every key of ``keys`` is set (``timeout``: the store's by default)."""
        self._run("check", (list(keys),), keys, timeout, op="wait")

    def delete_key(self, key: str) -> bool:
        return bool(self._run("delete_key", (key,)))

    def num_keys(self) -> int:
        return int(self._run("num_keys"))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is missing and
        ``expected_value`` is empty); returns the key's value afterwards (torch's rule: the
        expected value when the key is missing and not set)."""
        return _out(self._run("compare_set", (key, _bytes(expected_value),
                                              _bytes(desired_value))))

    def multi_get(self, keys: list) -> list:
        return [_out(v) for v in self._run("multi_get", (list(keys),), keys)]

    def multi_set(self, keys: list, values: list) -> None:
        if len(keys) != len(values):
            raise ValueError(f"multi_set: {len(keys)} keys but {len(values)} values")
        self._run("multi_set", (list(keys), [_bytes(v) for v in values]))


class HashStore(Store):
    """An in-process store (threads of one process share it)."""

    def __init__(self):
        super().__init__()
        self._table = _MemoryTable()


class FileStore(Store):
    """A store in the file ``file_name``, shared by the processes of one host (or of a shared
    file system with working ``flock``). ``world_size`` is accepted as torch's; every store
    opened on the file adds 1 to an internal key (so ``num_keys`` counts it, as torch's)."""

    def __init__(self, file_name: str, world_size: int = -1):
        super().__init__()
        self.path, self.world_size = os.fspath(file_name), world_size
        self._table = _FileTable(self.path)
        self._run("add", ("cleanup/", 1))

    def _timeout_error(self, op, keys, timeout_s):
        if op == "get":
            return DistStoreError(f"Timeout waiting for key: {keys[0]} after "
                                  f"{round(timeout_s * 1000)} ms")
        return DistStoreError("Wait timeout")


# -- TCPStore: a server thread in the master, clients everywhere --------------------------------

_FRAME = struct.Struct("!I")  # frame = 4-byte big-endian length + UTF-8 JSON


def _send_frame(sock: socket.socket, obj) -> None:
    body = json.dumps(obj).encode("utf-8")
    sock.sendall(_FRAME.pack(len(body)) + body)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        buf += chunk
    return bytes(buf)


def _recv_frame(sock: socket.socket):
    (n,) = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
    return json.loads(_recv_exact(sock, n).decode("utf-8"))


class _StoreServer:
    """The master's server: one thread accepting, one per client; each request
    ``{"cmd", "args", "wait", "timeout"}`` runs on the in-process table and is answered with
    ``{"ok": result}``, ``{"timeout": true}`` or ``{"error": text}``."""

    def __init__(self, host: str, port: int):
        self.table = _MemoryTable()
        try:
            self.listener = socket.create_server((host, port), reuse_port=False)
        except OSError as e:  # torch's type and first words, then the fix
            raise DistNetworkError(
                f"The server socket has failed to listen on any local network address. port: "
                f"{port}, useIpv6: {str(':' in host).lower()}, code: {-(e.errno or 0)}, name: {errno.errorcode.get(e.errno, '?')}, "
                f"message: {e.strerror or e} (TCPStore("
                f"{host!r}, {port}, is_master=True): another process listens on that port, "
                "e.g. a job still running or a MASTER_PORT shared by two jobs; pick a free "
                "port, or pass port=0 and read store.port)") from None
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, name="shardflow-tcpstore", daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        with conn:
            while True:
                try:
                    req = _recv_frame(conn)
                except (ConnectionError, OSError, ValueError):
                    return
                try:
                    if req["cmd"] not in _COMMANDS:
                        raise ValueError(f"unknown store command {req['cmd']!r}")
                    reply = {"ok": self.table.run(req["cmd"], req["args"], req["wait"],
                                                  float(req["timeout"]))}
                except _Timeout:
                    reply = {"timeout": True}
                except (ValueError, TypeError, KeyError) as e:
                    reply = {"error": str(e)}
                try:
                    _send_frame(conn, reply)
                except OSError:
                    return

    def close(self):
        self.listener.close()


class _TCPClientTable:
    """A connection to the master's server; requests are serialised by a lock."""

    def __init__(self, host: str, port: int, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=max(0.1, timeout_s))
                break
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise DistNetworkError(
                        f"TCPStore: could not connect to the master at {host}:{port} within "
                        f"{timeout_s:g} s ({e}); start the is_master=True store first and check "
                        "host_name and port") from None
                time.sleep(0.05)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.lock = threading.Lock()
        self.where = f"{host}:{port}"

    def run(self, cmd, args, wait_keys, timeout_s):
        with self.lock:
            try:
                self.sock.settimeout(timeout_s + 30.0)  # the server answers by timeout_s
                _send_frame(self.sock, {"cmd": cmd, "args": args, "wait": wait_keys,
                                        "timeout": timeout_s})
                reply = _recv_frame(self.sock)
            except (OSError, ConnectionError) as e:
                raise DistNetworkError(f"TCPStore {cmd}: lost the master at {self.where} ({e}); "
                                       "did the master process exit?") from None
        if "timeout" in reply:
            raise _Timeout
        if "error" in reply:
            raise ValueError(reply["error"])
        return reply["ok"]


class TCPStore(Store):
    """A store served over TCP by the ``is_master=True`` process (a thread), reached by every
    process at ``host_name:port`` (``port=0`` on the master picks a free port: read
    ``store.port``). With ``wait_for_workers`` the master's constructor returns once
    ``world_size`` stores (its own included) have joined."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout: timedelta = DEFAULT_STORE_TIMEOUT,
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True):
        super().__init__(timeout)
        self.host, self.world_size = host_name, world_size
        self._server = _StoreServer(host_name, int(port)) if is_master else None
        self.port = self._server.port if is_master else int(port)
        try:
            self._table = _TCPClientTable(host_name, self.port, _seconds(self._timeout))
            self._run("add", ("init/", 1))
            if is_master and wait_for_workers and world_size is not None:
                self._wait_for_workers(int(world_size))
        except BaseException:
            self.close()
            raise

    def _wait_for_workers(self, world_size: int) -> None:
        deadline = time.monotonic() + _seconds(self._timeout)
        while (joined := int(self._run("get", ("init/",), ("init/",)))) < world_size:
            if time.monotonic() >= deadline:
                raise DistStoreError(
                    f"Timed out after {_seconds(self._timeout):g} seconds waiting for clients. "
                    f"{joined}/{world_size} clients joined.")
            time.sleep(0.01)

    @property
    def libuvBackend(self) -> bool:  # noqa: N802 - PyTorch's name
        return False

    def _timeout_error(self, op, keys, timeout_s):
        return DistStoreError(f"wait timeout after {round(timeout_s * 1000)}ms, keys: "
                              + ", ".join("/" + k for k in keys))

    def close(self) -> None:
        """Close this store's connection (and the master's server)."""
        table = getattr(self, "_table", None)
        if table is not None:
            table.sock.close()
        if self._server is not None:
            self._server.close()


class PrefixStore(Store):
    """``store`` with ``prefix + "/"`` before every key (so groups can share one store)."""

    def __init__(self, prefix: str, store: Store):
        self.prefix, self.underlying_store = prefix, store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    @property
    def timeout(self) -> timedelta:
        return self.underlying_store.timeout

    def set_timeout(self, timeout) -> None:
        self.underlying_store.set_timeout(timeout)

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def get(self, key):
        return self.underlying_store.get(self._k(key))

    def add(self, key, amount):
        return self.underlying_store.add(self._k(key), amount)

    def append(self, key, value):
        self.underlying_store.append(self._k(key), value)

    def check(self, keys):
        return self.underlying_store.check([self._k(k) for k in keys])

    def wait(self, keys, timeout=None):
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def multi_get(self, keys):
        return self.underlying_store.multi_get([self._k(k) for k in keys])

    def multi_set(self, keys, values):
        self.underlying_store.multi_set([self._k(k) for k in keys], values)
