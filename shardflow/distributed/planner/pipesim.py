"""The step of shardflow's own pipeline schedule on a measured host, event by event.

The closed formula ``sum_s T_s + (m - 1) max_s T_s`` (``cost._pipeline``) is the steady state
of an ideal 1F1B with ranks that each own a processor and notice a message the moment it
lands. shardflow's schedule on a measured host differs in three ways that each cost time per
micro-batch, and this module replays them with the same stage times:

* **The timeline** (``pipelining.schedules._Schedule._timeline``): every rank places all
  ranks' actions on one greedy timeline of unit steps, and after each step exchanges that
  step's messages as one batch; an activation's header is waited for *in the step that
  produced it* (the receiver allocates from it), a gradient when the backward that needs
  it starts. :func:`timeline` is the same greedy rule (tested against the schedule's).
* **Waking up** (``comm.mpi_work.MPIWork.wait``): a rank waiting on a receive spins for
  ``SPIN_S`` (200 us), then naps 10 us, 20 us, ... doubling up to 1 ms, testing between
  naps, so a message that lands after ``W`` seconds of waiting is noticed at the first test
  after ``W`` (:func:`wake_delay`): up to 1 ms late per long wait, which is a large share of a
  small model's micro-batch.
* **Fewer cores than ranks** (``cores`` of the profile): ranks that compute, or spin in
  the first ``SPIN_S`` of a wait, share the cores equally (processor sharing: each runs at
  ``min(1, cores / running)``, the ``dp x tp`` ranks of a stage counting as that many);
  napping ranks do not run. The old bound ``max(schedule, busy / cores)`` is the limit of
  this replay when every rank could always run; the replay also sees the critical path
  slowed while off-path ranks hold the cores.

Every number comes from the profile (stage times at the rates of ``min(ranks, cores)``
busy ranks, the send/recv fit, ``cores``) or from the runtime's own constants (the spin and
nap schedule); nothing is fitted to measured steps.
"""

from __future__ import annotations

from ...comm.mpi_work import SPIN_S  # a wait spins this long before it naps
from ..pipelining.schedules import gpipe_actions, greedy_timeline, one_f_one_b_actions

__all__ = ["timeline", "wake_delay", "simulate", "SPIN_S", "FIRST_NAP_S", "MAX_NAP_S"]

FIRST_NAP_S = 1e-5  # MPIWork.wait: then naps of 10 us, doubling ...
MAX_NAP_S = 1e-3  # ... up to 1 ms


def actions_1f1b(r: int, p: int, m: int) -> list:
    """Pipeline rank ``r``'s actions (``Schedule1F1B``'s)."""
    return one_f_one_b_actions(r, p, m)


def actions_gpipe(r: int, p: int, m: int) -> list:
    """``ScheduleGPipe``'s actions: all forwards, then all backwards."""
    return gpipe_actions(r, m)


def timeline(acts: list, n_stages: int) -> list:
    """The schedule's greedy timeline (``_Schedule._timeline``): ``[{rank: action}]``."""
    return greedy_timeline(acts, n_stages, "pipeline timeline")


def wake_delay(waited: float) -> float:
    """Seconds between a message landing after ``waited`` seconds of waiting and the rank
    noticing it: 0 within the spin, else the rest of the nap it is in (module docstring)."""
    if waited <= SPIN_S:
        return 0.0
    t, nap = SPIN_S, FIRST_NAP_S
    while t < waited:
        t += nap
        nap = min(2 * nap, MAX_NAP_S)
    return t - waited


def _program(steps: list, r: int, n_stages: int, fwd, bwd) -> list:
    """Rank ``r``'s ops in order: ``("run", seconds, done_key or None)`` and
    ``("wait", key)`` (until the action ``key`` of another rank is done)."""
    ops = []
    for step in steps:
        a = step.get(r)
        if a is not None:
            kind, s, mb = a
            if kind == "B" and s < n_stages - 1:
                ops.append(("wait", ("B", s + 1, mb)))  # the gradient, waited at use
            ops.append(("run", fwd[s] if kind == "F" else bwd[s], a))
        for q, b in step.items():  # an activation's header is waited for in its own step
            if q != r and b[0] == "F" and b[1] + 1 == r and b[1] + 1 < n_stages:
                ops.append(("wait", b))
    return ops


def simulate(fwd: list, bwd: list, m: int, weights: list | None = None, cores: int | None = None,
             schedule: str = "1f1b", naps: bool = True) -> float:
    """Seconds from the first forward to the last backward of ``m`` micro-batches through
    ``len(fwd)`` stages, one per pipeline rank; ``fwd[s]``/``bwd[s]``: one micro-batch's
    forward/backward on stage ``s`` with its sends (seconds on a core of its own);
    ``weights[s]``: OS processes running stage ``s`` in step (its ``dp x tp`` ranks);
    ``cores``: the host's (None: every process has one). Event-driven processor sharing
    (module docstring)."""
    p = len(fwd)
    weights = weights or [1] * p
    make = actions_1f1b if schedule == "1f1b" else actions_gpipe
    steps = timeline([make(r, p, m) for r in range(p)], p)
    progs = [_program(steps, r, p, fwd, bwd) for r in range(p)]
    pc = [0] * p  # next op of each rank
    left = [0.0] * p  # seconds of work left in the current "run" op (at full speed)
    since = [None] * p  # when the current wait began
    done: dict = {}  # action -> time it finished
    now = 0.0

    def start(r):  # enter rank r's next op(s) that can start now
        while pc[r] < len(progs[r]):
            op = progs[r][pc[r]]
            if op[0] == "run":
                if left[r] <= 0.0:
                    left[r] = op[1]
                return
            if op[1] in done:  # the message is there
                if since[r] is not None:  # it waited: notices at its next test
                    t_land = done[op[1]]
                    waited = max(0.0, t_land - since[r])
                    wake = t_land + (wake_delay(waited) if naps else 0.0)
                    if wake > now:
                        return  # still napping
                since[r] = None
                pc[r] += 1
                continue
            if since[r] is None:
                since[r] = now
            return

    for r in range(p):
        start(r)
    guard = 0
    while any(pc[r] < len(progs[r]) for r in range(p)):
        guard += 1
        if guard > 100000:
            raise RuntimeError("pipeline replay did not finish")
        running = [r for r in range(p) if pc[r] < len(progs[r]) and progs[r][pc[r]][0] == "run"]
        spinning = [r for r in range(p) if pc[r] < len(progs[r]) and progs[r][pc[r]][0] == "wait"
                    and since[r] is not None and now - since[r] < SPIN_S]
        load = sum(weights[r] for r in running + spinning)
        rate = 1.0 if not cores or load <= cores else cores / load
        # the next event: a run op ends, a spin turns into naps, a napping rank wakes
        cands = [now + left[r] / rate for r in running]
        cands += [since[r] + SPIN_S for r in spinning]
        for r in range(p):
            if pc[r] < len(progs[r]) and progs[r][pc[r]][0] == "wait" and progs[r][pc[r]][1] in done \
                    and since[r] is not None:
                t_land = done[progs[r][pc[r]][1]]
                cands.append(t_land + (wake_delay(max(0.0, t_land - since[r])) if naps else 0.0))
        nxt = min((t for t in cands if t > now), default=now)
        for r in running:
            left[r] -= (nxt - now) * rate
        now = nxt
        for r in running:
            if left[r] <= 1e-12:
                left[r] = 0.0
                done[progs[r][pc[r]][2]] = now
                pc[r] += 1
        for r in range(p):
            start(r)
    return now
