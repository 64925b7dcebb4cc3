"""``torch.distributed.elastic.multiprocessing.errors``: ``@record`` and the failure types
(layer L6).

``@record`` wraps a script's entry point (``main``): an uncaught exception is written to the
JSON error file ``TORCHELASTIC_ERROR_FILE`` names (``ErrorHandler.record_exception``) and
re-raised, so the process still fails with its traceback; ``SystemExit(0)`` returns None, as
in torch (a ``run_path`` entry point that calls ``sys.exit(0)`` succeeds). A
``ChildFailedError`` raised inside copies its first failure's error file instead. Under
``shardflow run`` the launcher's root-cause block names the failing rank either way; the file
is for tools that read torchelastic's.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime
from functools import wraps
from string import Template
from typing import Any

from ...utils.logging import get_logger
from .error_handler import ErrorHandler
from .handlers import get_error_handler

__all__ = ["ProcessFailure", "ChildFailedError", "record", "ErrorHandler", "get_error_handler"]

logger = get_logger(__name__)

_EMPTY_ERROR_DATA: dict[str, Any] = {"message": "<NONE>"}
_NOT_AVAILABLE = "<N/A>"


@dataclass
class ProcessFailure:
    """A failed worker: its exit code and what its error file says (torch's dataclass).

    ``message`` and ``timestamp`` come from ``error_file`` when it exists (written by
    :class:`ErrorHandler`); otherwise ``error_file`` becomes ``"<N/A>"``, the timestamp is
    now and the message is made from the exit code (a negative one is a signal).
    """

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    error_file_data: dict = field(init=False)
    message: Any = field(init=False)
    timestamp: int = field(init=False)

    def __post_init__(self):
        self.error_file_data = _EMPTY_ERROR_DATA
        if os.path.isfile(self.error_file):
            with open(self.error_file) as fp:
                self.error_file_data = json.load(fp)
            self.message, self.timestamp = self._get_error_data(self.error_file_data)
        else:
            self.error_file, self.message, self.timestamp = _NOT_AVAILABLE, "", int(time.time())
        if not self.message:
            if self.exitcode < 0:
                self.message = (f"Signal {-self.exitcode} ({self.signal_name()}) received by "
                                f"PID {self.pid}")
            else:
                self.error_file_data = {**self.error_file_data, "errorTraits": {
                    "category": "system_terminated_error", "retryability": "False"}}
                self.message = ("To enable traceback see: "
                                "https://pytorch.org/docs/stable/elastic/errors.html")

    @staticmethod
    def _get_error_data(error_file_data: dict) -> tuple[Any, int]:
        message = error_file_data["message"]
        if isinstance(message, str):
            return message, int(error_file_data.get("timestamp", 0))
        return message, int(message["extraInfo"]["timestamp"])

    def signal_name(self) -> str:
        """The signal's name (``"SIGKILL"``) for a negative exit code, else ``"<N/A>"``."""
        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return _NOT_AVAILABLE
        return _NOT_AVAILABLE

    def timestamp_isoformat(self) -> str:
        return datetime.fromtimestamp(self.timestamp).isoformat(sep="_")


_FAILURE_FORMAT = """[${idx}]:
  time      : ${time}
  host      : ${hostname}
  rank      : ${rank} (local_rank: ${local_rank})
  exitcode  : ${exitcode} (pid: ${pid}) ${signal_name}
  error_file: ${error_file}
  traceback : ${message}"""

_MSG_FORMAT = """
${boarder}
${title}
${section}
Failures:
${other_failures}
${section}
Root Cause (first observed failure):
${root_failure}
${boarder}"""


class ChildFailedError(Exception):
    """Raised by a parent whose child process(es) failed: ``failures`` maps a global rank to
    its :class:`ProcessFailure`; the message lists them with the earliest as the root cause
    (torch's format). Raised inside ``@record``, the root cause's error file is copied to this
    process's error file instead of this exception."""

    def __init__(self, name: str, failures: dict):
        if not failures:
            raise ValueError("ChildFailedError needs at least one failure (rank -> "
                             "ProcessFailure), got none")
        self.name = name
        self.failures = failures
        super().__init__(self.format_msg())

    def get_first_failure(self) -> tuple[int, ProcessFailure]:
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-") -> str:
        title = f"{self.name} FAILED"
        root_rank, _ = self.get_first_failure()
        root, others, width = "", [], len(title)
        for idx, (rank, failure) in enumerate(self.failures.items()):
            fmt, w = self._format_failure(idx, rank, failure)
            width = max(width, w)
            if rank == root_rank:
                root = fmt
            else:
                others.append(fmt)
        width = min(width, 60)
        return Template(_MSG_FORMAT).substitute(
            boarder=boarder_delim * width, title=title, section=section_delim * width,
            root_failure=root, other_failures="\n".join(others or ["  <NO_OTHER_FAILURES>"]))

    def _format_failure(self, idx: int, rank: int, failure: ProcessFailure) -> tuple[str, int]:
        msg = failure.message
        if isinstance(msg, dict):
            msg = (msg.get("extraInfo", {}).get("py_callstack", msg.get("message", _NOT_AVAILABLE))
                   .replace("\n", "\n  "))
        name = failure.signal_name()
        fmt = Template(_FAILURE_FORMAT).substitute(
            idx=idx, time=failure.timestamp_isoformat(), hostname=socket.getfqdn(), rank=rank,
            local_rank=failure.local_rank, exitcode=failure.exitcode, pid=failure.pid,
            signal_name=f" ({name})" if name != _NOT_AVAILABLE else "",
            error_file=failure.error_file, message=msg)
        return fmt, max(len(line) for line in fmt.split("\n"))


def record(fn, error_handler: ErrorHandler | None = None):
    """Decorate a process's entry point so an uncaught exception is written to the error file
    and re-raised (module docstring). Use once per process, on ``main``."""
    if not error_handler:
        error_handler = get_error_handler()

    @wraps(fn)
    def wrapper(*args, **kwargs):
        error_handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:
                return None
            raise
        except ChildFailedError as e:
            rank, failure = e.get_first_failure()
            if failure.error_file != _NOT_AVAILABLE:
                error_handler.dump_error_file(failure.error_file, failure.exitcode)
            else:
                logger.info("local_rank %s FAILED with no error file. Decorate your entrypoint "
                            "fn with @record for traceback info.", rank)
            raise
        except Exception as e:
            error_handler.record_exception(e)
            raise

    return wrapper
