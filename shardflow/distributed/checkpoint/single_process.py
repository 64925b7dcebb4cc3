"""The note ``dcp.save`` / ``dcp.load`` give when they run in one process.

PyTorch warns (``UserWarning``) "torch.distributed is disabled, unavailable or
uninitialized, assuming the intent is to save/load in a single process." whenever either
runs with ``no_dist=True`` or without an initialized process group, so that a program that
forgot ``init_process_group`` learns that no rank is coordinated. shardflow says the same
(with torch's text, which programs and tests filter on) when ``no_dist=True`` or the world
is one process. Deviations: a job started with several ranks (``shardflow run -n 2``) is not
one process even before ``init_process_group`` (shardflow's collectives run over the job's
world: no note), and a one-process job that called ``init_process_group`` gets the note too
(torch's test is "no process group"; shardflow's world of one is made on first use, so
whether the program asked for it is not known here).
``format_utils`` and ``consolidate`` call save/load internally without it, as torch's do.
"""

from __future__ import annotations

import warnings

from ... import comm as _comm

__all__ = ["note_single_process"]


def note_single_process(what: str, no_dist: bool, process_group) -> None:
    """Warn as PyTorch does when ``what`` ("save" or "load") runs in one process."""
    single = no_dist or (process_group is None and _comm.get_world().size == 1)
    if single:
        warnings.warn(
            "torch.distributed is disabled, unavailable or uninitialized, assuming the intent "
            f"is to {what} in a single process.", UserWarning, stacklevel=3)
