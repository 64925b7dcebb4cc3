"""Where in the user's program a rank's blocked call was made (layer L2).

A timeout report names the collective a rank waits in (``all_gather``), but a user wrote
``dt.full_tensor()`` or ``model(x)``, not ``all_gather``: the line that says which of their
calls is stuck is what teaches the fix (session 35: ``full_tensor()`` called on one rank
only was reported as a bare ``all_gather``). :func:`user_call_site` walks the calling
thread's stack outwards to the first frame outside shardflow and returns e.g.
``"full_tensor() called at train.py:23: d.full_tensor()"`` -- the shardflow function the
program called, its file and line, and the source line. None when no frame of the program
is on the stack (a call waited on from a background thread).
"""

from __future__ import annotations

import linecache
import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_RUNNERS = ("threading.py", "runpy.py")


def _ours(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE)


_CALLER = object()


def user_call_site(frame=_CALLER) -> str | None:
    """``"<shardflow function>() called at <file>:<line>: <source>"`` for the innermost
    program frame that called into shardflow from ``frame`` (default: the caller's; None:
    no stack, e.g. a thread that has ended)."""
    f = sys._getframe(1) if frame is _CALLER else frame
    inner = None  # the outermost shardflow frame seen so far: the API the program called
    while f is not None:
        name = f.f_code.co_filename
        if _ours(name):
            inner = f
        elif inner is not None and not name.endswith(_STDLIB_RUNNERS):
            line = linecache.getline(name, f.f_lineno).strip()
            api = inner.f_code.co_name
            shown = os.path.relpath(name) if not os.path.relpath(name).startswith("..") else name
            return (f"{api}() called at {shown}:{f.f_lineno}" + (f": {line}" if line else ""))
        f = f.f_back
    return None
