"""The start-up watchdog's child is reaped within a bound: a child forked from a
multi-threaded process can be stuck on a lock another thread held at the fork, and an
unbounded ``waitpid`` hung ``init_process_group`` until pytest's timeout (seen in CI)."""

import os
import time

import pytest

from shardflow.comm.mpi_init import _reap


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_stuck_watchdog_child_is_killed_and_reaped():
    pid = os.fork()
    if pid == 0:  # a child that never exits on its own
        time.sleep(60)
        os._exit(0)
    start = time.monotonic()
    _reap(pid, grace_s=0.2)
    assert time.monotonic() - start < 10
    with pytest.raises(ChildProcessError):  # reaped: nothing left to wait for
        os.waitpid(pid, os.WNOHANG)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_an_exiting_child_is_reaped_at_once():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    _reap(pid, grace_s=30)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
