"""``torch.utils.file_baton.FileBaton``: a lock between processes made of one file, created
atomically (``O_CREAT | O_EXCL``): ``try_acquire()`` (True when this process created it),
``wait()`` (sleep in steps of ``wait_seconds`` until the holder removes it, warning once after
``warn_after_seconds``), ``release()`` (remove it). Build and cache code (one process builds,
the others wait) uses it, as torch's extension loader does."""

from __future__ import annotations

import os
import time
import warnings

__all__ = ["FileBaton"]


class FileBaton:
    """A file-based lock (see the module docstring)."""

    def __init__(self, lock_file_path, wait_seconds: float = 0.1, warn_after_seconds=None) -> None:
        self.lock_file_path = lock_file_path
        self.wait_seconds = wait_seconds
        self.fd = None
        self.warn_after_seconds = warn_after_seconds

    def try_acquire(self) -> bool:
        """Create the lock file; False when another process holds it."""
        try:
            self.fd = os.open(self.lock_file_path, os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return False
        return True

    def wait(self) -> None:
        """Return once the lock file is gone (its holder released it)."""
        warned = False
        start = time.time()
        while os.path.exists(self.lock_file_path):
            time.sleep(self.wait_seconds)
            if (self.warn_after_seconds is not None and not warned
                    and time.time() - start > self.warn_after_seconds):
                warnings.warn(f'Waited on lock file "{self.lock_file_path}" for {self.warn_after_seconds} seconds.',
                              stacklevel=2)
                warned = True

    def release(self) -> None:
        """Close and remove the lock file."""
        if self.fd is not None:
            os.close(self.fd)
        os.remove(self.lock_file_path)
