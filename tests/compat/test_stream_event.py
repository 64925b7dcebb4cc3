"""Top-level ``torch.Stream`` / ``torch.Event`` on the CPU against torch 2.13's: what works
(query, synchronize, wait_event, Event.wait/query/synchronize, equality, context manager) and
what raises, with the same exception type and message."""

import pytest
import torch

import shardflow as sf


def _outcome(fn):
    """(result, None) or (None, (exception type name, message))."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - the exception is the thing compared
        return None, (type(e).__name__, str(e))


def _calls(m):
    """The same calls on the module ``m`` (torch or shardflow)."""
    s, other = m.Stream(), m.Stream(device="cpu")
    timed, timed2, untimed = m.Event(enable_timing=True), m.Event(enable_timing=True), m.Event()
    return {
        "device_attrs": lambda: (str(s.device), s.device_type, s.device_index, s.stream_id),
        "query": s.query,
        "synchronize": s.synchronize,
        "is_capturing": s.is_capturing,
        "native_handle": lambda: s.native_handle,
        "wait_event": lambda: s.wait_event(timed),
        "wait_stream": lambda: s.wait_stream(other),
        "record_event": s.record_event,
        "record_event_given": lambda: s.record_event(untimed),
        "equal": lambda: (s == other, s == 1, hash(s) == hash(other)),
        "context": lambda: s.__enter__() is s,
        "positional_priority": lambda: m.Stream("cpu", 0),
        "bad_device": lambda: m.Stream(device=1.5),
        "event_attrs": lambda: (str(timed.device), timed.event_id),
        "event_query": timed.query,
        "event_record": timed.record,
        "event_record_on": lambda: timed.record(s),
        "event_wait": lambda: (timed.wait(), timed.wait(s)),
        "event_synchronize": timed.synchronize,
        "elapsed_untimed": lambda: untimed.elapsed_time(timed),
        "elapsed_unrecorded": lambda: timed.elapsed_time(timed2),
        "elapsed_not_event": lambda: timed.elapsed_time(1),
        "event_positional": lambda: m.Event("cpu", True),
        "event_bad_device": lambda: m.Event(device=1.5),
        "ipc": timed.ipc_handle,
    }


def test_cpu_stream_and_event_match_torch():
    ours, theirs = _calls(sf), _calls(torch)
    for name in theirs:
        t_result, t_error = _outcome(theirs[name])
        s_result, s_error = _outcome(ours[name])
        if t_error is None:
            assert s_error is None, (name, s_error)
            assert s_result == t_result, name
        else:
            assert s_error is not None, (name, s_result)
            assert s_error[0] == t_error[0], (name, s_error, t_error)
            if t_error[0] != "TypeError" and name != "ipc":  # Python's own wording there
                assert s_error[1].startswith(t_error[1]), (name, s_error, t_error)


def test_accelerator_devices_need_cuda():
    if sf.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        sf.Stream(device=0)
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        sf.Event(device="cuda")
    assert sf.Stream().device.type == "cpu" and sf.Event().device.type == "cpu"
