"""Failures end with a named error within the timeout, and shutdown does not hang
(failure_program.py): a call to a dead worker, a worker that dies mid-call, a dead
rendezvous leader at shutdown. (Remote exceptions and timeouts: test_rpc_core.py.)

The three scenarios run at the same time (own ports), started by one module fixture: each
spends its time starting processes and waiting on failure detection, not computing."""

import pytest

from .workers import finish, start

SCENARIOS = {"dead_peer": 3, "mid_call": 2, "leader_dead": 3}  # scenario: workers


@pytest.fixture(scope="module")
def scenarios():
    started = {name: start("failure_program.py", world, args=(name,)) for name, world in SCENARIOS.items()}
    done = {}
    for name, workers in started.items():
        try:
            done[name] = finish(workers, f"failure_program.py {name}", timeout=90, check=False)
        except AssertionError as e:  # a timeout: reported by that scenario's test
            done[name] = e
    return done


def launched(scenarios, name):
    w = scenarios[name]
    if isinstance(w, AssertionError):
        raise w
    return w


def test_calls_to_a_dead_worker_fail_fast_and_shutdown_skips_it(scenarios):
    w = launched(scenarios, "dead_peer")
    assert w[0].proc.returncode == 0 and w[1].proc.returncode == 0, w[0].err + w[1].err
    r = w[0].result()
    name, msg, elapsed = r["call_dead"]
    assert name == "RPCConnectionError" and "worker 'worker2' (rank 2)" in msg and "unreachable" in msg
    assert elapsed < 5.0   # refused at once, not the 30 s rpc_timeout
    name, msg, elapsed = r["remote_dead"]
    assert name == "RPCConnectionError" and elapsed < 5.0
    assert r["live_still_works"][:2] == ["ok", "3"]
    for rank in (0, 1):
        name, _, elapsed = w[rank].result()["shutdown"]
        assert name == "ok" and elapsed < 15.0


def test_a_worker_dying_mid_call_fails_the_call_at_once(scenarios):
    w = launched(scenarios, "mid_call")
    r = w[0].result()
    name, msg, elapsed = r["mid_call"]
    assert name == "RPCConnectionError", r
    assert "rpc of __main__:die_after on worker 'worker1' (rank 1) failed" in msg
    assert "closed the connection" in msg and elapsed < 5.0
    assert r["after"][0] == "RPCConnectionError" and r["after"][2] < 5.0
    assert r["shutdown"][0] == "ok" and r["shutdown"][2] < 15.0


def test_shutdown_without_the_leader_does_not_hang(scenarios):
    w = launched(scenarios, "leader_dead")
    for rank in (1, 2):
        r = w[rank].result()
        assert r["peer_call"][:2] == ["ok", "2.0"] and r["peer_done"], r
        assert r["leader_call"][0] == "RPCConnectionError" and r["leader_call"][2] < 5.0
        assert r["shutdown"][0] == "ok" and r["shutdown"][2] < 15.0
        assert "the barrier with rank 0 failed" in w[rank].err
