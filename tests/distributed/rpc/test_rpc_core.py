"""The core RPC API (rpc_sync, rpc_async, remote, RRef, errors, timeouts, value types) on
3 plain worker processes; see core_program.py for what each entry exercises."""

import pytest

from .workers import launch


@pytest.fixture(scope="module")
def core():
    workers = launch("core_program.py", 3, timeout=150)
    return workers[0].result()


def test_calls_and_destinations(core):
    assert core["sync"] == [[9.0] * 3] * 2                 # (ones + 2) * 3 on worker1
    assert core["info"] == [2, "worker2", "worker0"]
    assert core["by_info"] == "worker2" and core["by_rank"] == "worker1"
    assert core["async"] == [3, True, 103]                  # wait, done, then()
    assert core["self"] == [[2.0] * 3] * 2                  # a worker calling itself
    assert core["torch_fn"] == [[2.0] * 3] * 2              # a library function by name
    assert core["nested"] == 6 and core["async_execution"] == 60


def test_values_round_trip(core):
    assert core["dtypes"] == {"f64": "shardflow.float64", "i64": "shardflow.int64", "b": "shardflow.bool",
                              "bf16": "shardflow.bfloat16", "u8": "shardflow.uint8"}
    assert core["values_equal"] is True
    assert core["requires_grad"] == [True, True]            # flag kept, tied tensors stay tied
    assert core["module"] == ["Linear", True, "Parameter", True]


def test_sender_refuses_what_cannot_travel(core):
    assert "lambda" in core["lambda"] and "module level" in core["lambda"]
    assert "bound method" in core["bound"] and "Counter.incr" in core["bound"]
    assert "register_class" in core["unregistered"]


def test_remote_exceptions_keep_type_and_traceback(core):
    err = core["remote_error"]
    assert err.startswith("On WorkerInfo(id=1, name=worker1):\nValueError('boom 7')")
    assert "Traceback (most recent call last)" in err and 'raise ValueError(f"boom {x}")' in err
    assert "On WorkerInfo(id=2, name=worker2)" in core["key_error"]


def test_timeouts_are_named_and_bounded(core):
    msg, elapsed, is_runtime = core["timeout"]
    assert "RPC ran for more than the set timeout (0.5 s)" in msg and "__main__:slow" in msg
    assert 0.45 < elapsed < 3.0 and is_runtime
    assert core["async_timeout"] == "RPCTimeoutError"


def test_rref_api(core):
    assert core["rref"] == [False, "worker1", "worker1"]
    assert core["rref_proxy"] == [15, 16, 18]               # rpc_sync(), rpc_async(), remote()
    assert core["confirmed"] is True
    assert "Cannot call local_value() on a non-local reference" in core["local_value_error"]
    assert core["to_here"] == [[2.0] * 3] * 2
    assert core["user_to_user"] == 12.0 and core["to_owner"] == 12.0
    assert core["local_rref"] == [True, [3.0, 3.0], [3.0, 3.0], 6.0]
    assert core["remote_fn_error"] == "On WorkerInfo(id=2, name=worker2):"
    assert core["remote_self"] == [True, 3]
