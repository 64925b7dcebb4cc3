"""``RRef``: a reference to a value that lives on one worker (its *owner*), and the
reference counting that decides when the owner may drop the value (PyTorch's protocol).

Identity. An RRef is named by ``rref_id = (creator worker, counter)``; every copy held by a
worker other than the owner (a *user* RRef) has its own ``fork_id``. The owner keeps, per
``rref_id``, the set of fork ids alive (``forks``) and the owner RRef itself in ``owners``
while that set is not empty: that table entry is what keeps the value alive for remote
users. The owner's own Python references keep it alive as any Python object.

Messages (each answered, so every step is confirmed):

* ``remote(to, f)``: the caller makes a user RRef (new rref id and fork id) and holds it in
  ``pending_users`` until the owner answers; the owner creates the owner RRef, registers the
  caller's fork, runs ``f`` and answers. The answer confirms the fork
  (``confirmed_by_owner()``); an error in ``f`` is kept and raised by ``to_here()``.
* Sending an RRef inside a message (``encode_fork``, sender side):
  - the owner sends it: it registers the new fork at once (PyTorch's early fork
    registration) and keeps the owner RRef in ``owners``;
  - a user sends it: it holds its own RRef in ``pending_children[fork_id]`` (so its delete
    cannot reach the owner before the child is known there).
* Receiving (``decode_fork``):
  - the owner gets its own RRef back: the owner RRef (same object); it answers the parent
    with ``accept`` (or, if it sent it to itself, drops the fork it registered);
  - a user gets it from the owner: the fork is already registered, the RRef is confirmed;
  - a user gets it from another user: it holds the new RRef in ``pending_users``, sends
    ``fork`` to the owner, and on the owner's answer is confirmed and sends ``accept`` to
    the parent, which then releases its pending child.
* A user RRef whose last Python reference goes (``__del__``; pending tables hold strong
  references, so this happens only after confirmation) sends ``del`` to the owner, which
  removes the fork and, with no fork left, the ``owners`` entry: the value is freed when the
  last user drops it, never earlier.
* ``shutdown()`` sends ``del`` for every user RRef still alive (PyTorch's
  ``_delete_all_user_and_unforked_owner_rrefs``) before the workers stop.
"""

from __future__ import annotations

import itertools
import threading

from ...futures import Future
from .errors import RPCError
from .state import current_agent

__all__ = ["RRef", "RRefContext"]


class RRef:
    """``RRef(value)`` wraps a local value (this worker is the owner); ``rpc.remote``
    returns RRefs to values on other workers."""

    _shardflow_rref = True  # the codec's marker (no import cycle)

    def __init__(self, value=None, type_hint=None):
        agent = _agent_or_raise()
        self._agent = agent
        self._owner_id = agent.info.id
        self._rref_id = agent.rrefs.new_id()
        self._fork_id = None
        self._value = Future()
        self._value.set_result(value)
        self._confirmed = True
        self._deleted = False

    # -- construction by the context ----------------------------------------------------
    @classmethod
    def _owner_pending(cls, agent, rref_id) -> RRef:
        r = cls.__new__(cls)
        r._agent, r._owner_id, r._rref_id, r._fork_id = agent, agent.info.id, tuple(rref_id), None
        r._value, r._confirmed, r._deleted = Future(), True, False
        return r

    @classmethod
    def _user(cls, agent, owner_id: int, rref_id, fork_id, confirmed: bool) -> RRef:
        r = cls.__new__(cls)
        r._agent, r._owner_id, r._rref_id, r._fork_id = agent, owner_id, tuple(rref_id), tuple(fork_id)
        r._value, r._confirmed, r._deleted = None, confirmed, False
        r._creation_error = None
        return r

    # -- PyTorch's API ------------------------------------------------------------------
    def is_owner(self) -> bool:
        return self._fork_id is None

    def owner(self):
        return self._agent.worker(self._owner_id)

    def owner_name(self) -> str:
        return self.owner().name

    def confirmed_by_owner(self) -> bool:
        return self._confirmed

    def local_value(self):
        """The value, on the owner (raises elsewhere, as PyTorch does)."""
        if not self.is_owner():
            raise RuntimeError(
                f"Cannot call local_value() on a non-local reference (this RRef is owned by "
                f"{self.owner()}); call it on the owner, or use to_here() to fetch a copy")
        return self._value.wait()

    def to_here(self, timeout: float = -1.0):
        """The value: the object itself on the owner, a copy fetched from the owner
        elsewhere (within ``timeout`` seconds; default: the RPC timeout)."""
        if self.is_owner():
            return self._value.wait()
        err = getattr(self, "_creation_error", None)
        if err is not None:
            raise err
        return self._agent.fetch(self, timeout).wait()

    def _get_future(self) -> Future:
        """On the owner, the value's future; on the creator of a ``remote`` call, the future
        of the creation (completed when the owner answered)."""
        if self.is_owner():
            return self._value
        fut = getattr(self, "_creation", None)
        if fut is None:
            fut = Future()
            fut.set_result(None)
        return fut

    def rpc_sync(self, timeout: float = -1.0):
        """``rref.rpc_sync().method(*args)`` runs ``method`` on the owner's value (blocking)."""
        return _Proxy(self, "rpc_sync", timeout)

    def rpc_async(self, timeout: float = -1.0):
        return _Proxy(self, "rpc_async", timeout)

    def remote(self, timeout: float = -1.0):
        return _Proxy(self, "remote", timeout)

    def backward(self, dist_autograd_ctx_id: int = -1, retain_graph: bool = False) -> None:
        """Distributed backward from this RRef's (scalar) value, on its owner."""
        from . import dist_autograd

        if self.is_owner():
            value = self.local_value()
            if dist_autograd_ctx_id == -1:
                value.backward(retain_graph=retain_graph)
            else:
                dist_autograd.backward(dist_autograd_ctx_id, [value], retain_graph)
            return
        self._agent.call_sync(self._owner_id, _backward_on_owner,
                              (self, dist_autograd_ctx_id, retain_graph), {}, -1.0)

    def __repr__(self) -> str:
        kind = "OwnerRRef" if self.is_owner() else "UserRRef"
        fork = "" if self.is_owner() else f", fork_id={self._fork_id}"
        return f"{kind}(rref_id={self._rref_id}{fork})"

    def __reduce__(self):
        raise TypeError(
            "an RRef cannot be pickled; pass it as an argument of an RPC call (it is forked "
            "by the RRef protocol) or fetch its value with to_here()")

    def __del__(self):
        if self._fork_id is None or self._deleted:
            return
        self._deleted = True
        agent = self._agent
        try:
            agent.rrefs.user_deleted(self._owner_id, self._rref_id, self._fork_id)
        except Exception:  # interpreter shutdown, or RPC already down
            pass


def _backward_on_owner(rref, ctx_id, retain_graph):
    rref.backward(ctx_id, retain_graph)


def _invoke_on_value(rref, name: str, args, kwargs):
    return getattr(rref.local_value(), name)(*args, **kwargs)


class _Proxy:
    """``rref.rpc_sync()`` / ``rpc_async()`` / ``remote()``: attribute access gives a
    callable that runs that method of the value on the owner."""

    def __init__(self, rref: RRef, how: str, timeout: float):
        self._rref, self._how, self._timeout = rref, how, timeout

    def __getattr__(self, name: str):
        rref, how, timeout = self._rref, self._how, self._timeout

        def call(*args, **kwargs):  # api.rpc_sync / rpc_async / remote, on the agent itself
            agent, call_args = _agent_or_raise(), (rref, name, args, kwargs)
            if how == "remote":
                return agent.remote(rref.owner(), _invoke_on_value, call_args, None, timeout)
            fut = agent.call(rref.owner(), _invoke_on_value, call_args, None, timeout)
            return fut.wait() if how == "rpc_sync" else fut
        return call


def _agent_or_raise():
    agent = current_agent()
    if agent is None:
        raise RuntimeError("RPC has not been initialized: call shardflow.distributed.rpc.init_rpc first")
    return agent


class RRefContext:
    """This worker's RRef tables (see the module docstring)."""

    def __init__(self, agent):
        self.agent = agent
        self.me = agent.info.id
        self.lock = threading.RLock()
        self.owners: dict = {}            # rref_id -> owner RRef (kept alive while forked)
        self.forks: dict = {}             # rref_id -> set of fork ids
        self.pending_users: dict = {}     # fork_id -> user RRef awaiting the owner's answer
        self.pending_children: dict = {}  # fork_id -> RRef held until the child accepted
        self.users: dict = {}             # fork_id -> owner id, every user RRef not yet deleted
        self._ids = itertools.count(1)

    def new_id(self) -> tuple:
        return (self.me, next(self._ids))

    # -- owner side -----------------------------------------------------------------------
    def owner_rref(self, rref_id) -> RRef:
        """The owner RRef for ``rref_id``, created (value pending) when not known yet."""
        rref_id = tuple(rref_id)
        with self.lock:
            r = self.owners.get(rref_id)
            if r is None:
                r = self.owners[rref_id] = RRef._owner_pending(self.agent, rref_id)
            return r

    def add_fork(self, rref: RRef, fork_id) -> None:
        with self.lock:
            self.owners[rref._rref_id] = rref
            self.forks.setdefault(rref._rref_id, set()).add(tuple(fork_id))

    def del_fork(self, rref_id, fork_id) -> None:
        rref_id, fork_id = tuple(rref_id), tuple(fork_id)
        with self.lock:
            forks = self.forks.get(rref_id)
            if forks is None or fork_id not in forks:
                return
            forks.discard(fork_id)
            if forks:
                return
            del self.forks[rref_id]
            dropped = self.owners.pop(rref_id, None)
        del dropped  # the value goes with its last reference, outside the lock

    # -- user side --------------------------------------------------------------------------
    def new_user(self, owner_id: int, rref_id, fork_id, confirmed: bool) -> RRef:
        r = RRef._user(self.agent, owner_id, rref_id, fork_id, confirmed)
        with self.lock:
            self.users[r._fork_id] = (owner_id, r._rref_id)
            if not confirmed:
                self.pending_users[r._fork_id] = r
        return r

    def confirm(self, fork_id, error: BaseException | None = None) -> None:
        with self.lock:
            r = self.pending_users.pop(tuple(fork_id), None)
        if r is not None:
            r._confirmed = True
            if error is not None:
                r._creation_error = error

    def user_deleted(self, owner_id: int, rref_id, fork_id) -> None:
        """From ``RRef.__del__``, which may run in any thread at any allocation (the garbage
        collector), even while that thread holds a connection's send lock: the ``del``
        message is only scheduled here, and sent by the loop later."""
        with self.lock:
            if self.users.pop(fork_id, None) is None:
                return
        self.agent.transport.loop.call_soon_threadsafe(
            self.agent.notify, owner_id, {"k": "del", "rr": list(rref_id), "fk": list(fork_id)})

    def undo_fork(self, rref: RRef, fork_id) -> None:
        """Take back a fork made for a message that was not sent."""
        fork_id = tuple(fork_id)
        if rref.is_owner():
            self.del_fork(rref._rref_id, fork_id)
        else:
            self.release_child(fork_id)

    def release_child(self, fork_id) -> None:
        with self.lock:
            self.pending_children.pop(tuple(fork_id), None)

    # -- sending and receiving RRefs --------------------------------------------------------
    def encode_fork(self, rref: RRef, dst: int) -> list:
        """The wire form of ``rref`` sent to ``dst``: ``[owner, rref_id, fork_id, parent]``."""
        fork_id = self.new_id()
        if rref.is_owner():
            self.add_fork(rref, fork_id)
        else:
            with self.lock:
                self.pending_children[fork_id] = rref
        return [rref._owner_id, list(rref._rref_id), list(fork_id), self.me]

    def decode_fork(self, body, src: int) -> RRef:
        try:
            owner, rref_id, fork_id, parent = int(body[0]), tuple(body[1]), tuple(body[2]), int(body[3])
        except (TypeError, ValueError, IndexError):
            raise RPCError(f"malformed RRef in a message from worker {src}: {body!r}") from None
        if owner == self.me:
            r = self.owner_rref(rref_id)
            if parent == self.me:
                self.del_fork(rref_id, fork_id)  # sent to itself: drop the early registration
            else:
                self.agent.notify(parent, {"k": "accept", "fk": list(fork_id)})
            return r
        if parent == owner:
            return self.new_user(owner, rref_id, fork_id, confirmed=True)
        r = self.new_user(owner, rref_id, fork_id, confirmed=False)
        self.agent.notify(owner, {"k": "fork", "rr": list(rref_id), "fk": list(fork_id)},
                          on_done=lambda err: self._fork_confirmed(r._fork_id, parent, err))
        return r

    def _fork_confirmed(self, fork_id, parent: int, err) -> None:
        self.confirm(fork_id, err)
        self.agent.notify(parent, {"k": "accept", "fk": list(fork_id)})

    # -- shutdown / introspection -----------------------------------------------------------
    def delete_all_users(self) -> list:
        """Send ``del`` for every user RRef still alive; the futures of those messages."""
        with self.lock:
            users = list(self.users.items())
            self.users.clear()
        return [self.agent.notify(owner, {"k": "del", "rr": list(rref_id), "fk": list(fork_id)})
                for fork_id, (owner, rref_id) in users]

    def debug_info(self) -> dict:
        with self.lock:
            return {"num_owner_rrefs": len(self.owners),
                    "num_pending_users": len(self.pending_users),
                    "num_pending_children": len(self.pending_children),
                    "num_forks": sum(len(f) for f in self.forks.values())}
