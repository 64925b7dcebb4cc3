"""``shardflow.futures``: torch.futures' ``Future``, ``collect_all`` and ``wait_all``.

A ``Future`` is a value that some thread will set later (an RPC reply, an
``async_execution`` function's result). Semantics follow ``torch.futures.Future``:

* ``wait()`` blocks until the future is completed and returns its value, or raises the
  exception it was completed with; ``value()`` does the same without blocking (it raises
  when the future is not completed yet); ``done()`` says whether it is completed.
* ``then(callback)`` returns a new Future completed with ``callback(this_future)``; an
  exception raised by the callback completes the new future with a RuntimeError that names
  it (PyTorch's "Got the following error when running the callback"). ``add_done_callback``
  runs ``callback(this_future)`` and ignores its result.
* Callbacks run in the thread that completes the future, or at once in the caller's thread
  when it is already completed (PyTorch's rule): a callback must not block.
* ``set_result`` / ``set_exception`` complete it; completing twice raises.

No dependency on the rest of shardflow: RPC (``distributed/rpc``) builds on it.
"""

from __future__ import annotations

import threading
import traceback

__all__ = ["Future", "collect_all", "wait_all"]

_PENDING = object()


class Future:
    """A value that will be set later by some thread (``torch.futures.Future``)."""

    __slots__ = ("_cond", "_value", "_error", "_callbacks", "__weakref__")

    def __init__(self, *, devices=None):
        self._cond = threading.Condition(threading.Lock())
        self._value = _PENDING
        self._error: BaseException | None = None
        self._callbacks: list = []

    # -- state --------------------------------------------------------------------------
    def done(self) -> bool:
        return self._value is not _PENDING or self._error is not None

    def wait(self, timeout: float | None = None):
        """The value once completed (raises the future's exception). ``timeout`` (seconds,
        shardflow's addition) raises TimeoutError when it passes first."""
        if not self.done():
            with self._cond:
                if not self._cond.wait_for(self.done, timeout):
                    raise TimeoutError(
                        f"Future.wait(timeout={timeout}) passed before the future completed")
        return self.value()

    def value(self):
        """The value of a completed future (raises its exception); raises RuntimeError when
        it is not completed yet: call ``wait()`` first, or use it inside a ``then`` callback."""
        if self._error is not None:
            raise self._error
        if self._value is _PENDING:
            raise RuntimeError(
                "Future.value() called on a future that is not completed yet; call wait() "
                "(which blocks until it is) or read value() inside a then() callback")
        return self._value

    # -- completion ---------------------------------------------------------------------
    def set_result(self, result) -> None:
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, value, error) -> None:
        with self._cond:
            if self.done():
                raise RuntimeError(
                    "Attempting to mark a completed Future as complete again. Note that a "
                    "Future can only be marked completed once.")
            if error is not None:
                self._error = error
            else:
                self._value = value
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    # -- chaining -----------------------------------------------------------------------
    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` when completed (now, if it already is); its result is ignored
        and an exception it raises is printed, not propagated."""
        def guarded(fut):
            try:
                callback(fut)
            except Exception:  # PyTorch logs and drops it too
                traceback.print_exc()
        self._on_done(guarded)

    def then(self, callback) -> Future:
        """A new Future completed with ``callback(self)`` once this one is completed."""
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:
                err = RuntimeError(
                    f"Got the following error when running the callback: "
                    f"{type(e).__name__}: {e}")
                err.__cause__ = e
                out.set_exception(err)
        self._on_done(run)
        return out

    def _on_done(self, fn) -> None:
        with self._cond:
            if not self.done():
                self._callbacks.append(fn)
                return
        fn(self)

    def __repr__(self) -> str:
        state = "pending" if not self.done() else ("error" if self._error is not None else "done")
        return f"<Future {state}>"


def collect_all(futures) -> Future:
    """A Future completed, once every one of ``futures`` is, with the list of them."""
    futures = list(futures)
    out = Future()
    if not futures:
        out.set_result([])
        return out
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)
    for f in futures:
        if hasattr(f, "_on_done"):
            f._on_done(one_done)
        else:
            # a future completed by its own wait(): a collective's ``Work.get_future()``
            # (distributed/algorithms/ddp_comm_hooks/future.py) has no thread to complete
            # it, so it is waited here (nanochat's DistMuon: ``collect_all(all_gather
            # futures).wait()``; this raised AttributeError)
            f.wait()
            one_done(f)
    return out


def wait_all(futures) -> list:
    """Wait for every future; their values in order (raises the first error met)."""
    return [f.wait() for f in collect_all(futures).wait()]
