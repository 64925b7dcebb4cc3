"""The threads that execute incoming calls: ``num_worker_threads`` at most, started as
needed, fed through one ``SimpleQueue`` (cheaper per call than ``ThreadPoolExecutor``,
whose per-task Future and locks showed in the RPC latency profile)."""

from __future__ import annotations

import logging
import queue
import threading

log = logging.getLogger("shardflow.distributed.rpc")


class WorkerPool:
    def __init__(self, max_threads: int, name: str):
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._max = max_threads
        self._name = name
        self._threads: list = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn, *args) -> None:
        if self._closed:
            return
        self._q.put((fn, args))
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max:
                t = threading.Thread(target=self._run, name=f"{self._name}-{len(self._threads)}",
                                     daemon=True)
                self._threads.append(t)
                self._idle += 1
                t.start()

    def _run(self) -> None:
        q = self._q
        while True:
            item = q.get()
            if item is None:
                return
            with self._lock:
                self._idle -= 1
            fn, args = item
            try:
                fn(*args)
            except Exception:
                log.exception("rpc: a task of the worker pool failed")
            with self._lock:
                self._idle += 1

    def shutdown(self) -> None:
        """Stop the threads once the queued tasks are done (does not wait for them)."""
        self._closed = True
        for _ in self._threads:
            self._q.put(None)
