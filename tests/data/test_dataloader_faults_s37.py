"""Session 37's DataLoader fault probes, against torch 2.13.

* ``timeout=`` expiry: torch raises "DataLoader timed out after 0.5 seconds" after 0.5 s;
  here the message came after ``timeout`` + 2 s (the workers were asked to exit and given
  2 s, which a hung worker never uses). Now a hung worker is terminated at once.
"""

import os
import signal
import time

import numpy as np
import pytest

import shardflow.utils.data as sfd


class _HangsFirst(sfd.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 0:
            time.sleep(30)  # hung: never answers the loader, nor its request to stop
        return np.float32(i)


def test_a_timeout_expiry_raises_after_timeout_not_after_the_shutdown_grace():
    it = iter(sfd.DataLoader(_HangsFirst(), num_workers=1, timeout=0.5))
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.5 seconds waiting "
                                           r"for batch 0 from worker 0 \(pid \d+\)"):
        next(it)
    took = time.monotonic() - t0
    assert took < 1.8, f"the error came {took:.1f} s after the start (timeout 0.5 s)"
    assert not any(p.is_alive() for p in it.workers), "a hung worker was left running"


class _Items(sfd.Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return np.float32(i)


@pytest.mark.parametrize("drop_last", ["False", 0, None])
def test_batch_sampler_drop_last_not_a_bool_raises_torchs_value_error(drop_last):
    tdata = pytest.importorskip("torch.utils.data")
    with pytest.raises(ValueError) as theirs:
        tdata.BatchSampler(tdata.SequentialSampler(range(5)), 2, drop_last)
    # it was taken as bool(drop_last): "False" dropped the last batch
    with pytest.raises(ValueError) as ours:
        sfd.BatchSampler(sfd.SequentialSampler(range(5)), 2, drop_last)
    assert str(ours.value).startswith(str(theirs.value) + " (pass True or False"), ours.value
    with pytest.raises(ValueError, match="^drop_last should be a boolean value"):
        sfd.DataLoader(_Items(), batch_size=2, drop_last="False")


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True])
def test_batch_sampler_batch_size_message_is_torchs(batch_size):
    tdata = pytest.importorskip("torch.utils.data")
    with pytest.raises(ValueError) as theirs:
        tdata.BatchSampler(tdata.SequentialSampler(range(5)), batch_size, False)
    with pytest.raises(ValueError) as ours:
        sfd.BatchSampler(sfd.SequentialSampler(range(5)), batch_size, False)
    assert str(ours.value) == str(theirs.value)


def test_timeout_with_num_workers_0_raises_torchs_assertion_error():
    tdata = pytest.importorskip("torch.utils.data")
    with pytest.raises(AssertionError) as theirs:
        iter(tdata.DataLoader(list(range(3)), timeout=1))
    loader = sfd.DataLoader(_Items(), timeout=1)  # accepted, as torch: it fails at iter()
    with pytest.raises(AssertionError) as ours:  # the timeout was ignored
        iter(loader)
    assert str(ours.value).startswith(str(theirs.value) + " (DataLoader(timeout=1) bounds")
    assert "pass num_workers > 0, or leave timeout out" in str(ours.value)
    assert len(list(sfd.DataLoader(_Items(), timeout=0))) == 5


class _ExitsAt1(sfd.Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return np.float32(i)


@pytest.mark.parametrize("how, words", [
    ("kill", r"is killed by signal: Killed\. \(worker 0, exit code -9, SIGKILL: "),
    ("exit", r"exited unexpectedly with exit code 3\. \(worker 0, exit code 3: ")])
def test_a_worker_that_dies_is_reported_in_torchs_words(how, words):
    # torch's SIGCHLD handler: "DataLoader worker (pid N) is killed by signal: Killed." /
    # "... exited unexpectedly with exit code 3."; shardflow said "DataLoader worker 0 (pid
    # N) exited unexpectedly with exit code -9 (signal SIGKILL)"
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid \d+\) " + words +
                       r"it may have been killed for using too much memory"):
        list(sfd.DataLoader(_ExitsAt1(how), num_workers=1))


class _RaisesAt2(sfd.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise ValueError("bad item 2")
        return np.float32(i)


def _bad_init(worker_id):
    raise RuntimeError(f"init failed {worker_id}")


@pytest.mark.parametrize("case", ["getitem", "worker_init_fn"])
def test_a_worker_exception_starts_with_torchs_exact_line(case):
    tdata = pytest.importorskip("torch.utils.data")
    kind, kw = ((ValueError, {}) if case == "getitem" else
                (RuntimeError, {"worker_init_fn": _bad_init, "dataset": None}))

    def first_lines(data_mod, dataset):
        args = dict(dataset=dataset, num_workers=1, **{k: v for k, v in kw.items() if k != "dataset"})
        with pytest.raises(kind) as e:
            list(data_mod.DataLoader(**args))
        return str(e.value).rstrip("\n").split("\n")

    theirs = first_lines(tdata, list(range(4)) if case != "getitem" else _TorchRaisesAt2())
    ours = first_lines(sfd, _RaisesAt2())
    # shardflow's first line said "Caught ValueError while loading batch 2 in DataLoader ..."
    assert ours[0] == theirs[0] == f"Caught {kind.__name__} in DataLoader worker process 0."
    assert ours[1] == theirs[1] == "Original Traceback (most recent call last):"
    last = "bad item 2" if case == "getitem" else "init failed 0"
    assert ours[-1] == theirs[-1] == f"{kind.__name__}: {last}"
    assert e_notes(sfd, _RaisesAt2(), kind, kw) == [
        "(The error came while loading batch 2.)" if case == "getitem" else
        "(The error came in worker_init_fn or its start-up.)"]  # printed with the traceback


def e_notes(data_mod, dataset, kind, kw):
    args = dict(dataset=dataset, num_workers=1, **{k: v for k, v in kw.items() if k != "dataset"})
    with pytest.raises(kind) as e:
        list(data_mod.DataLoader(**args))
    return e.value.__notes__


class _TorchRaisesAt2:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise ValueError("bad item 2")
        return i
