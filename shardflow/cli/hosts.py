"""The hosts of ``shardflow run --hosts h1:4,h2:4`` / ``--hostfile FILE``: checked before
mpiexec starts, and Open MPI's (PRTE's) own reports about hosts turned into one line.

* :func:`check_hosts` reads ``--hosts`` or the hostfile and raises :class:`HostsError`
  (one line: the file, the line number and text, what is wrong, the fix) for what Open MPI
  would refuse with a page of its own text and exit code 250 (a missing or unreadable file,
  no host in it, ``slots=abc``, ``slots=0``, ``max_slots`` below ``slots``) or silently
  ignore (a bare word after the host, e.g. ``node1 4`` meaning ``node1 slots=4``).
  Hostfile syntax (Open MPI's): ``host [key=value ...]`` per line, ``#`` comments.
* :func:`translate_prte_block` turns a PRTE message block (the text between two dashed
  lines mpiexec prints) about hosts into ``shardflow run``'s one-line error naming the
  host's line: a remote daemon that did not report back (ssh failed, no such host, no
  shardflow/Open MPI there), a hostfile PRTE refused, no usable node. Other blocks are
  left as they are (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# hostfile keys whose value is a count of slots (Open MPI / PRTE spellings)
_COUNT_KEYS = ("slots", "slot", "count", "cpu", "max_slots", "max-slots", "maxslots", "max_slot")
_MAX_KEYS = ("max_slots", "max-slots", "maxslots", "max_slot")


class HostsError(ValueError):
    """``--hosts`` / ``--hostfile`` cannot work; the message is one line with the fix."""


@dataclass(frozen=True)
class HostLine:
    """One host of the job: its name, where it was given (``"--hosts entry 2"``,
    ``"hostfile F line 3"``) and the text given there."""

    host: str
    where: str
    text: str

    def describe(self) -> str:
        return f"{self.where}: {self.text!r}"


def _count(value: str) -> int | None:
    return int(value) if re.fullmatch(r"\d+", value) else None


def check_hosts(hosts: str | None = None, hostfile: str | None = None) -> list[HostLine]:
    """The job's hosts (empty for a local job); raises HostsError for what cannot work."""
    out = []
    if hosts:
        for i, entry in enumerate(hosts.split(","), 1):
            text = entry.strip()
            name, _, slots = text.partition(":")
            where = f"--hosts entry {i}"
            if not name:
                raise HostsError(f"{where} of {hosts!r} names no host; fix: e.g. --hosts h1:4,h2:4")
            if slots and not (_count(slots) or 0) >= 1:
                raise HostsError(f"{where}: {text!r}: the slot count must be a positive integer, "
                                 f"got {slots!r}; fix: e.g. {name}:4")
            out.append(HostLine(name, where, text))
    if hostfile:
        out += _read_hostfile(hostfile)
    return out


def _read_hostfile(path: str) -> list[HostLine]:
    try:
        with open(path) as f:
            raw = f.read().splitlines()
    except OSError as e:
        raise HostsError(f"--hostfile {path}: cannot be read ({e.strerror}); fix: give the path of "
                         "a file with one `host slots=N` per line") from None
    out = []
    for no, line in enumerate(raw, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        where = f"hostfile {path} line {no}"
        name, *fields = text.split()
        values = {}
        for field in fields:
            key, eq, value = field.partition("=")
            if not eq:
                raise HostsError(f"{where}: {text!r}: {field!r} is not key=value (Open MPI would "
                                 f"ignore it); fix: e.g. '{name} slots={field if field.isdigit() else 4}'")
            if key.lower() in _COUNT_KEYS:
                n = _count(value)
                if n is None or n < 1:
                    raise HostsError(f"{where}: {text!r}: {key} must be a positive integer, got "
                                     f"{value!r}; fix: e.g. '{name} {key}=4'")
                values[key.lower()] = n
        slots = next((values[k] for k in _COUNT_KEYS if k in values and k not in _MAX_KEYS), None)
        most = next((values[k] for k in _MAX_KEYS if k in values), None)
        if slots is not None and most is not None and most < slots:
            raise HostsError(f"{where}: {text!r}: max_slots ({most}) is below slots ({slots}); fix: "
                             f"raise max_slots to at least {slots} or drop it")
        out.append(HostLine(name, where, text))
    if not out:
        raise HostsError(f"--hostfile {path}: names no host (only comments or blank lines); fix: "
                         "one `host slots=N` per line")
    return out


def _field(block: str, label: str) -> str | None:
    m = re.search(rf"^\s*{label}:\s*(.+?)\s*$", block, re.M)
    return m.group(1) if m else None


def _given(host: str, lines: list[HostLine]) -> HostLine | None:
    """The line that gave ``host`` (PRTE may print the short name)."""
    for hl in lines:
        if hl.host == host or hl.host.split(".")[0] == host.split(".")[0]:
            return hl
    return None


def translate_prte_block(block: list[str], lines: list[HostLine], hostfile: str | None,
                         before: list[str] = ()) -> str | None:
    """One line for a PRTE message block about hosts (see the module docstring), or None.
    ``before``: mpiexec's other untagged lines (e.g. ssh's own error)."""
    text = "\n".join(block)
    if "A daemon failed to report back" in text:
        host = _field(text, "Remote host") or "?"
        status = _field(text, "Daemon exit status")
        given = _given(host, lines)
        full = given.host if given else host
        said = next((ln.strip() for ln in reversed(before)
                     if ln.strip().startswith("ssh:") and host in ln), None)
        why = f"; ssh said: {said}" if said else ""
        line = f" ({given.describe()})" if given else ""
        return (f"shardflow run: error: host {host!r}{line} did not start its "
                f"Open MPI daemon (exit status {status or '?'}{why}); fix: check that `ssh {full} "
                "true` works without a password and that the same Python, shardflow and Open MPI "
                "are installed there (`shardflow doctor --hosts ...` checks both)")
    if "PRTE was unable to open the hostfile" in text or "bad parameter in the hostfile" in text:
        detail = " ".join(ln.strip() for ln in block
                          if ln.strip() and "hostfile" not in ln and ln.strip() != hostfile)
        return (f"shardflow run: error: Open MPI refused --hostfile {hostfile}: {detail}; fix: "
                "one `host slots=N` per line")
    if "No nodes are available for this job" in text:
        return ("shardflow run: error: Open MPI found no usable host in "
                f"{'--hostfile ' + hostfile if hostfile else '--hosts'}; fix: list at least one "
                "reachable host")
    return None
