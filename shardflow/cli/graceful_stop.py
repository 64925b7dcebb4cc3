"""Turn SIGTERM / SIGHUP / SIGINT into a request to stop training at the next step boundary.

What a training loop does with it (``shardflow train``): finish the step in progress,
write a checkpoint, exit ``128 + signal`` (143 for SIGTERM, 129 for SIGHUP, 130 for SIGINT)
so that ``--resume`` continues from exactly there. Choices:

* SIGTERM is what schedulers (Slurm, Kubernetes) send on preemption, and what
  ``shardflow run`` forwards to every rank when it gets one; SIGHUP is a closed terminal.
* SIGINT (Ctrl-C) saves too: people expect Ctrl-C to keep their progress. A second Ctrl-C
  raises ``KeyboardInterrupt`` at once (stop now, without saving the current step).
  Further SIGTERM / SIGHUP are ignored: the launcher's grace period bounds the wait.
* The handler only records the signal (Python runs it between bytecodes of the main thread;
  a rank blocked in a collective sees it when the call returns). Ranks may receive it at
  slightly different moments, so the loop must agree on it across ranks (an all-reduce of
  the signal number, MAX) before acting; see ``cli/train/loop.py``.
* Handlers can only be installed from the main thread; elsewhere this is a no-op and
  signals keep their previous behaviour.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["GracefulStop", "STOP_SIGNALS"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class GracefulStop:
    """Context manager: while active, ``signum`` is the first stop signal received (or None).

    ``say(text)`` is called once when the first signal arrives (e.g. to print a line)."""

    def __init__(self, say=None):
        self.signum: int | None = None
        self._say = say
        self._old: dict = {}

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._old[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _on_signal(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum
            if self._say is not None:
                again = " (Ctrl-C again: stop now without saving)" if signum == signal.SIGINT else ""
                self._say(f"received {signal.Signals(signum).name}: finishing this step, then "
                          f"saving a checkpoint{again}")
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt
