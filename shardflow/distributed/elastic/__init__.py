"""``torch.distributed.elastic``'s names that training scripts import (layer L6).

torchrun's agent (rendezvous, worker restarts) is shardflow's launcher: ``shardflow run -n N
script.py`` starts the job, ``--max-restarts`` restarts it (docs/DISTRIBUTED.md). What a
script itself touches is here: ``multiprocessing.errors.record`` (the ``@record`` decorator
that writes a rank's uncaught exception to ``TORCHELASTIC_ERROR_FILE``), ``ChildFailedError``,
``ErrorHandler``, ``utils.logging.get_logger``; ``rendezvous``'s exception classes, and its
handler API as names that raise an error pointing to ``shardflow run``.
"""

from . import multiprocessing, rendezvous, utils

__all__ = ["multiprocessing", "rendezvous", "utils"]
