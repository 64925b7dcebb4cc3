"""``schedule`` and ``ProfilerAction``: which steps a profile records (PyTorch's semantics).

``schedule(wait=w, warmup=u, active=a, repeat=r, skip_first=s)`` returns a function of
the step number: the first ``s`` steps are skipped (NONE), then cycles of ``w`` NONE,
``u`` WARMUP, ``a`` RECORD steps (the last one RECORD_AND_SAVE, at whose end
``on_trace_ready`` is called); after ``r`` cycles (0: forever) every step is NONE.
"""

from __future__ import annotations

from enum import Enum


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class ProfilerActivity(Enum):
    """What to profile. CPU is everything shardflow runs on the host (ops, collectives, data
    loading); CUDA is accepted (a CuPy build's kernels are launched from those same
    events) but no device-side timing is collected."""

    CPU = 0
    CUDA = 1


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    for name, value in (("wait", wait), ("warmup", warmup), ("active", active),
                        ("repeat", repeat), ("skip_first", skip_first), ("skip_first_wait", skip_first_wait)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"schedule({name}=...) must be an int >= 0, got {value!r}")
    if active < 1:
        raise ValueError(f"schedule(active=...) must be >= 1 step to record, got {active}")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:  # torch: the first cycle starts without its wait steps
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if pos == cycle - 1 else ProfilerAction.RECORD

    return action


def _always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD
