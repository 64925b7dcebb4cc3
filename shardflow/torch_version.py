"""``torch.torch_version``: ``TorchVersion``, the ``str`` that ``torch.__version__`` is, which
compares as a version with strings, tuples and ``packaging`` versions.

``shardflow.__version__`` is ``"2.13.0+shardflow.0.1.0"``: the PyTorch release whose API
shardflow implements (and is tested against), with shardflow's own version as the PEP 440
local label. Programs gate features on ``torch.__version__`` (``>= "2.0"``, ``>= (1, 12)``,
``version.parse(torch.__version__) >= version.parse("1.10")``); with shardflow's bare
``"0.1.0"`` they took their pre-1.0 paths or refused to run. ``version.SHARDFLOW_VERSION``
is shardflow's own.

Comparisons follow PEP 440 for the forms versions take here (release numbers, then a, b, rc
before the release, .post after, .dev before all of them, a local label after the same
public version: ``2.13.0+shardflow.0.1.0 > "2.13.0"``, as torch's ``2.13.0+cpu``);
what does not parse compares as a plain string, as PyTorch's does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["TorchVersion"]

_PATTERN = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?P<post_seg>[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d+)?)?"
    r"(?P<dev_seg>[-_.]?dev[-_.]?(?P<dev>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _key(text: str) -> tuple | None:
    """A sort key for a version string, or None when it is not one."""
    m = _PATTERN.match(text)
    if m is None:
        return None
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:  # 2.0 == 2.0.0
        release.pop()
    if m["pre"] is not None:
        pre = (0, _PRE[m["pre"].lower()], int(m["pre_n"] or 0))
    elif m["dev_seg"] is not None and m["post_seg"] is None:
        pre = (-1, 0, 0)  # 1.0.dev0 < 1.0a0
    else:
        pre = (1, 0, 0)
    post = -1 if m["post_seg"] is None else int(m["post"] or 0)
    dev = float("inf") if m["dev_seg"] is None else int(m["dev"] or 0)
    # a local label sorts after the same public version (PEP 440): 2.13.0+cpu > 2.13.0
    local = () if m["local"] is None else tuple(
        (1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", m["local"]))
    return tuple(release), pre, post, dev, m["local"] is not None, local


def _other_key(other) -> tuple | None:
    if isinstance(other, str):
        return _key(other)
    if hasattr(other, "release") and not isinstance(other, tuple):  # packaging's Version
        return _key(str(other))
    if isinstance(other, Iterable):
        return _key(".".join(str(part) for part in other))
    return None


class TorchVersion(str):
    """A version string that compares as a version (module docstring)."""

    __slots__ = ()

    def _cmp(self, other, method: str):
        mine, theirs = _key(self), _other_key(other)
        if mine is None or theirs is None:
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __gt__(self, other):
        return self._cmp(other, "__gt__")

    def __ge__(self, other):
        return self._cmp(other, "__ge__")

    def __lt__(self, other):
        return self._cmp(other, "__lt__")

    def __le__(self, other):
        return self._cmp(other, "__le__")

    def __eq__(self, other):
        return self._cmp(other, "__eq__")

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__
