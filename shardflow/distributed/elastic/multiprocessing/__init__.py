"""``torch.distributed.elastic.multiprocessing``: its ``errors`` module (``@record``) and
``get_logger``. Starting worker processes (torch's ``start_processes``) is the launcher's job
here: it raises an error naming ``shardflow run`` (and ``shardflow.multiprocessing.spawn``)."""

from ..utils.logging import get_logger
from . import errors
from .errors import ProcessFailure

__all__ = ["errors", "get_logger", "ProcessFailure", "start_processes"]


def start_processes(name, entrypoint, args, envs, logs_specs=None, log_line_prefixes=None,
                    start_method="spawn", numa_options=None, duplicate_stdout_filters=None,
                    duplicate_stderr_filters=None):
    """torchelastic's worker starter; shardflow starts ranks with its launcher instead."""
    raise NotImplementedError(
        "torch.distributed.elastic.multiprocessing.start_processes is torchrun's agent "
        "internals; in shardflow `shardflow run -n N script.py` starts the ranks (or "
        "shardflow.multiprocessing.spawn(fn, args, nprocs=N) from a program): see "
        "docs/DISTRIBUTED.md"
    )
