"""The profiler's slot in the lower layers: the active recorder, or None.

``shardflow.profiler`` (a higher layer) puts its recorder here while a ``profile`` is
recording; the instrumented points read it with one attribute check and do nothing more
when it is None: collectives (``MPICommunicator._run``, send/recv) and waits on async
handles (``MPIWork.wait``) here, ``DataLoader.__iter__`` in ``data``. The recorder's
``span(name, cat, **args)`` is a context manager timing one event.
"""

from __future__ import annotations

current = None  # the recorder of shardflow.profiler while one records, else None


def set_current(recorder) -> None:
    """Install (or remove, with None) the active recorder."""
    global current
    current = recorder
