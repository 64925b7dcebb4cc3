"""Writing ``shardflow train``'s checkpoints without stopping training: a snapshot of the
state is taken in the loop, the file is written in a background thread.

What the loop waits for is the gather (a collective under sharded layouts) and
:func:`snapshot`, one copy of every tensor into host memory (memcpy speed: a few ms for
tens of MB). Serialising, the CRC-32s, ``fsync`` and the atomic rename happen in the
writer thread (:class:`CheckpointWriter`) while the next steps train; NumPy, zlib and the
file writes release the GIL for the large buffers. One write is in flight at a time: a
save that comes while the previous file is still being written waits for it first
(``wait``), so files appear in step order and pruning sees them all. The writer thread is
not a daemon: an interpreter that exits (an exception, a second Ctrl-C) finishes the file
first; a killed process leaves the temp file, removed at the next start, and the previous
checkpoint intact (``checkpoint/atomic.py``).

``--ckpt-sync`` writes in the loop instead (the stall is then the whole write).
"""

from __future__ import annotations

import threading
import time

import numpy as np

import shardflow as sf


def snapshot(obj):
    """``obj`` with every Tensor / array replaced by a host copy (training may change the
    originals in place while the copy is written)."""
    if isinstance(obj, sf.Tensor):
        return sf.from_numpy(np.array(obj.numpy(), copy=True))
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, dict):
        return {k: snapshot(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(snapshot(v) for v in obj)
    return obj


class CheckpointWriter:
    """Writes checkpoint files one at a time, in a background thread or in the caller
    (``background=False``); keeps the time the loop stopped for and the write times."""

    def __init__(self, background: bool = True):
        self.background = background
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.stalls_s: list[float] = []  # the loop's time per save (gather + snapshot + hand-off)
        self.writes_s: list[float] = []  # the file's write time per save

    def submit(self, state: dict, path: str, after, stall_start: float) -> None:
        """Write ``state`` to ``path``, then call ``after()`` (in the writer). ``state`` must
        be a :func:`snapshot`. ``stall_start``: when the loop's part of this save began."""
        self.wait()
        if self.background:
            self._thread = threading.Thread(target=self._write, args=(state, path, after),
                                            name="shardflow-checkpoint-writer")
            self._thread.start()
            self.stalls_s.append(time.perf_counter() - stall_start)
        else:
            self._write(state, path, after)
            self.stalls_s.append(time.perf_counter() - stall_start)
            self.wait()

    def wait(self) -> None:
        """Until the write in flight (if any) is done; re-raises its error here."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _write(self, state: dict, path: str, after) -> None:
        t0 = time.perf_counter()
        try:
            sf.save(state, path)
            after()
        except BaseException as e:  # noqa: BLE001 - handed to the loop by wait()
            self._error = e
        self.writes_s.append(time.perf_counter() - t0)

    def summary(self) -> str | None:
        """One line: saves, the loop's stall per save, the write time per save."""
        if not self.stalls_s:
            return None
        stall = 1e3 * sum(self.stalls_s) / len(self.stalls_s)
        write = 1e3 * sum(self.writes_s) / max(1, len(self.writes_s))
        where = "in the background" if self.background else "in the loop (--ckpt-sync)"
        return (f"checkpoints: {len(self.stalls_s)} saved; the loop stopped {stall:.1f} ms per "
                f"save (gather + copy), the file took {write:.1f} ms, written {where}")
