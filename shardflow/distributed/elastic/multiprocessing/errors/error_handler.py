"""``ErrorHandler``: writes an exception as torchelastic's JSON error file (layer L6).

The file is the one ``TORCHELASTIC_ERROR_FILE`` names (``_config.torchelastic_error_file``);
when none is named nothing is written, as in torch. Format (torch's, so torchrun-aware tools
read it)::

    {"message": {"message": "<Type>: <text>",
                 "extraInfo": {"py_callstack": "<traceback>", "timestamp": "<unix seconds>"}}}
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import time
import traceback
import warnings

from ..... import _config

__all__ = ["ErrorHandler"]

logger = logging.getLogger(__name__)


class ErrorHandler:
    """torch's ErrorHandler: subclasses override ``initialize`` / ``record_exception``."""

    def _get_error_file_path(self) -> str | None:
        return _config.torchelastic_error_file()

    def initialize(self) -> None:
        """Enable ``faulthandler`` (a crash prints every thread's stack), as torch does."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as e:  # e.g. sys.stderr replaced by an object without fileno()
            warnings.warn(f"Unable to enable fault handler. {type(e).__name__}: {e}",
                          stacklevel=2)

    def _write_error_file(self, file_path: str, error_msg: str) -> None:
        try:
            with open(file_path, "w") as fp:
                fp.write(error_msg)
        except Exception as e:
            warnings.warn(f"Unable to write error to file. {type(e).__name__}: {e}",
                          stacklevel=2)

    def record_exception(self, e: BaseException) -> None:
        """Write ``e`` (with the traceback being handled) to the error file, if one is named."""
        file = self._get_error_file_path()
        if file:
            data = {
                "message": {
                    "message": f"{type(e).__name__}: {e}",
                    "extraInfo": {
                        "py_callstack": traceback.format_exc(),
                        "timestamp": str(int(time.time())),
                    },
                }
            }
            with open(file, "w") as fp:
                json.dump(data, fp)

    def override_error_code_in_rootcause_data(self, rootcause_error_file: str,
                                              rootcause_error: dict, error_code: int = 0):
        """Set ``errorCode`` in a child's error data (a signal-killed child cannot)."""
        if "message" not in rootcause_error:
            logger.warning("child error file (%s) does not have field `message`. \n"
                           "cannot override error code: %s", rootcause_error_file, error_code)
        elif isinstance(rootcause_error["message"], str):
            logger.warning("child error file (%s) has a new message format. \n"
                           "skipping error code override", rootcause_error_file)
        else:
            rootcause_error["message"]["errorCode"] = error_code

    def dump_error_file(self, rootcause_error_file: str, error_code: int = 0):
        """Copy a child's error file (the root cause) to this process's error file."""
        with open(rootcause_error_file) as fp:
            rootcause_error = json.load(fp)
        if error_code:
            self.override_error_code_in_rootcause_data(rootcause_error_file, rootcause_error,
                                                       error_code)
        my_error_file = self._get_error_file_path()
        if my_error_file:
            if os.path.isfile(my_error_file):
                logger.warning("%s already exists and will be overwritten.", my_error_file)
                os.remove(my_error_file)
            self._write_error_file(my_error_file, json.dumps(rootcause_error))
            logger.info("dumped error file to parent's %s", my_error_file)
        else:
            logger.error("no error file defined for parent, to copy child error file (%s)",
                         rootcause_error_file)
