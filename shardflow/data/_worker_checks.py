"""DataLoader checks on worker processes, as torch's ``DataLoader``:

* :func:`checked_multiprocessing_context`: the ``multiprocessing_context`` argument, a
  start-method name (``"fork"``, ``"spawn"``, ``"forkserver"``, turned into its context) or
  a ``multiprocessing`` context object, only with ``num_workers > 0``.
* :func:`worker_number_warning`: the warning torch gives when a loader would start more
  workers than this process may use CPUs (``sched_getaffinity`` where there is one).
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.context
import os


def checked_multiprocessing_context(context, num_workers: int):
    """``context`` as a ``multiprocessing`` context (None stays None); raises torch's
    ValueError / TypeError for a bad one, before the loader changes."""
    if context is None:
        return None
    if num_workers <= 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
            f"but got num_workers={num_workers}"
        )
    if isinstance(context, str):
        valid = mp.get_all_start_methods()
        if context not in valid:
            raise ValueError(
                f"multiprocessing_context option should specify a valid start method in {valid!r}, "
                f"but got multiprocessing_context={context!r}"
            )
        context = mp.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(
            "multiprocessing_context option should be a valid context object or a string "
            f"specifying the start method, but got multiprocessing_context={context}"
        )
    return context


def usable_cpu_count() -> int | None:
    """CPUs this process may run on (its affinity set where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def worker_number_warning(num_workers: int) -> str | None:
    """torch's message when ``num_workers`` exceeds the usable CPUs, else None."""
    if not num_workers:
        return None
    suggest = usable_cpu_count()
    if suggest is not None and num_workers <= suggest:
        return None
    if suggest is not None:
        cpuset = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
        suggested = (f"Our suggested max number of worker in current system is {suggest}{cpuset}, "
                     "which is smaller than what this DataLoader is going to create.")
    else:
        suggested = "DataLoader is not able to compute a suggested max number of worker in current system."
    return (f"This DataLoader will create {num_workers} worker processes in total. {suggested} "
            "Please be aware that excessive worker creation might get DataLoader running slow or even "
            "freeze, lower the worker number to avoid potential slowness/freeze if necessary.")
