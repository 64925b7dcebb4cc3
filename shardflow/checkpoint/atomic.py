"""Atomic file writes, and the cleanup of temp files that killed writes leave behind.

Write protocol (:func:`atomic_write`): the bytes go to a temp file in the target's folder,
named ``.<target>.sf<pid>-<random>.tmp``. The writer holds an exclusive ``flock`` on it
from creation until after the rename, flushes and fsyncs it, ``os.replace``s it over the
target and fsyncs the folder. A crash at any point leaves either the old file or the new
one, never a mix; an exception removes the temp file. The file gets the permissions
``open(path, "wb")`` would give it (what ``torch.save`` does): an existing target's mode,
else ``0o666`` less the umask. ``mkstemp`` alone makes it ``0o600``: a checkpoint that the
rest of a group on a shared cluster could not read, where torch's could. A ``SIGKILL`` (or a power loss)
cannot run any cleanup, so its temp file stays — hence:

Cleanup (:func:`clean_stale_temp_files`), run by ``shardflow train`` when it starts:

* only one folder, never recursive; only files named like ours: the pattern above, or the
  pattern of earlier shardflow versions (``.<name>.safetensors.<8 chars>.tmp`` and
  ``.metrics.csv.<8 chars>.tmp``, no pid, no lock);
* never a file a live writer is working on: the cleaner takes the file's ``flock`` without
  blocking; a live writer holds it (a dead process's locks are released by the kernel), so
  a locked file is skipped. The lock is also what makes this safe across hosts on a shared
  folder where the filesystem supports ``flock`` (local disks, NFSv4);
* a file younger than ``min_age_s`` (by mtime) is left alone: that covers the microseconds
  between the writer creating the file and locking it. Files of earlier versions carry no
  lock, so they must be older than ``legacy_min_age_s`` (10 minutes; a live writer keeps
  the mtime fresh as it writes).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time

try:  # POSIX; on other platforms writes are not locked and cleanup relies on age alone
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

__all__ = ["atomic_write", "clean_stale_temp_files", "TEMP_MARK"]

TEMP_MARK = ".sf"
_OURS = re.compile(r"^\.(?P<target>.+)\.sf(?P<pid>\d+)-[A-Za-z0-9_]+\.tmp$")
_LEGACY = re.compile(r"^\.(?P<target>.+\.safetensors|metrics\.csv)\.[a-z0-9_]{8}\.tmp$")


def _lock(fd: int, blocking: bool) -> bool:
    """Exclusive flock on ``fd``; False when ``blocking`` is off and another holder has it."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError:  # a filesystem without flock: treat the file as unlocked
        return True
    return True


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it
    (``/proc/self/status``); elsewhere set and put back at once."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:  # pragma: no cover - not Linux
        pass
    mask = os.umask(0o022)  # pragma: no cover
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def _open_mode(path: str) -> int:
    """The permission bits ``open(path, "wb")`` leaves the file with: an existing file keeps
    its own, a new one gets ``0o666`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def atomic_write(path: str, write_fn) -> None:
    """Call ``write_fn(fileobj)`` on a locked temp file next to ``path``, then atomically rename."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}{TEMP_MARK}{os.getpid()}-",
                               suffix=".tmp", dir=folder)
    f = os.fdopen(fd, "wb")
    try:
        if hasattr(os, "fchmod"):  # POSIX
            os.fchmod(fd, _open_mode(path))
        _lock(f.fileno(), blocking=True)
        write_fn(f)
        f.flush()
        os.fsync(f.fileno())
        # renamed while still open and locked: a cleaner never sees it unlocked under its temp name
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        f.close()
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


def clean_stale_temp_files(folder, *, min_age_s: float = 5.0,
                           legacy_min_age_s: float = 600.0) -> list[tuple[str, int]]:
    """Remove the temp files of interrupted :func:`atomic_write` calls in ``folder``.

    Returns ``[(path, size_in_bytes), ...]`` of what was removed. See the module docstring
    for what counts as stale; nothing else is touched."""
    folder = os.fspath(folder)
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    now = time.time()
    for name in names:
        if _OURS.match(name):
            min_age = min_age_s if fcntl is not None else legacy_min_age_s
        elif _LEGACY.match(name):
            min_age = legacy_min_age_s
        else:
            continue
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:  # gone already (its writer renamed it), or a symlink: not ours
            continue
        try:
            st = os.fstat(fd)
            if not os.path.isfile(path) or now - st.st_mtime < min_age:
                continue
            if not _lock(fd, blocking=False):  # a live writer holds it
                continue
            # the name may have been renamed to the target since we opened it; only remove the
            # temp name if it still refers to the file we locked
            try:
                same = os.stat(path, follow_symlinks=False).st_ino == st.st_ino
            except OSError:
                same = False
            if same:
                os.unlink(path)
                removed.append((path, st.st_size))
        finally:
            os.close(fd)
    return removed
