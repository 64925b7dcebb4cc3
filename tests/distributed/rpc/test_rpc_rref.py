"""RRef reference counting (PyTorch's protocol), checked by counting live objects on the
owner: freed when the last user drops its reference, never earlier (rref_program.py)."""

from .workers import launch


def test_values_live_exactly_as_long_as_some_user_holds_them():
    workers = launch("rref_program.py", 3, timeout=150)
    r = workers[0].result()
    assert r["created"] == [["a"], 1, True]
    assert r["two_forks"] and r["worker2_confirmed"]
    assert r["one_fork_left"] and r["kept_for_worker2"] == ["a"]
    assert r["freed"]
    assert r["kept_while_in_flight"] == ["b"]
    assert r["pending_child_kept"] == [["b"], True] and r["pending_child_freed"]
    assert r["owner_shared"] == ["worker1", True, ["c"]] and r["owner_shared_freed"]
    assert r["three_more_forks"] and r["back_to_one"] and r["d_alive"] == ["d"]
    assert r["unsendable"] == 0 and r["d_freed"]
    assert r["e_alive"] == ["e"]
    assert workers[1].result()["live_after_shutdown"] == []
