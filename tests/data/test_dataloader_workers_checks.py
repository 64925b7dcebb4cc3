"""DataLoader ``multiprocessing_context`` and ``check_worker_number_rationality`` against
torch 2.13 (values accepted, the context object stored, errors, the warning)."""
import multiprocessing as mp
import os
import warnings

import pytest
import torch.utils.data as tud

import shardflow.utils.data as sfd


def _data():
    return list(range(6))


def _both():
    return ((sfd.DataLoader, "sf"), (tud.DataLoader, "torch"))


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_start_method_name_becomes_its_context(method):
    for cls, _ in _both():
        loader = cls(_data(), num_workers=1, multiprocessing_context=method)
        ctx = loader.multiprocessing_context
        assert isinstance(ctx, mp.context.BaseContext)
        assert ctx.get_start_method() == method


def test_context_object_and_none_kept():
    ctx = mp.get_context("spawn")
    for cls, _ in _both():
        assert cls(_data(), num_workers=2, multiprocessing_context=ctx).multiprocessing_context is ctx
        assert cls(_data(), num_workers=2).multiprocessing_context is None
        assert cls(_data()).multiprocessing_context is None


@pytest.mark.parametrize("bad, exc, pattern", [
    ("nope", ValueError, "should specify a valid start method in .*but got multiprocessing_context='nope'"),
    (3, TypeError, "should be a valid context object or a string specifying the start method"),
])
def test_bad_context_errors_match_torch(bad, exc, pattern):
    for cls, _ in _both():
        with pytest.raises(exc, match=pattern):
            cls(_data(), num_workers=1, multiprocessing_context=bad)


def test_context_without_workers_is_an_error_as_torch():
    for cls, _ in _both():
        with pytest.raises(ValueError, match="can only be used with multi-process loading.*num_workers=0"):
            cls(_data(), num_workers=0, multiprocessing_context="fork")
        loader = cls(_data(), num_workers=0)
        with pytest.raises(ValueError, match="num_workers=0"):
            loader.multiprocessing_context = "spawn"


def test_spawn_context_loads_the_same_batches():
    loader = sfd.DataLoader(_data(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]


def _warnings_of(loader):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader.check_worker_number_rationality()
    return [str(w.message) for w in caught]


def test_worker_number_warning_matches_torch():
    cpus = len(os.sched_getaffinity(0))
    for n in (0, 1, cpus):
        assert _warnings_of(sfd.DataLoader(_data(), num_workers=n)) == []
        assert _warnings_of(tud.DataLoader(_data(), num_workers=n)) == []
    ours = _warnings_of(sfd.DataLoader(_data(), num_workers=cpus + 3))
    ref = _warnings_of(tud.DataLoader(_data(), num_workers=cpus + 3))
    assert ours == ref and len(ours) == 1
    assert f"will create {cpus + 3} worker processes" in ours[0]


def test_construction_warns_like_torch():
    n = len(os.sched_getaffinity(0)) + 2
    for cls, _ in _both():
        with pytest.warns(UserWarning, match=f"This DataLoader will create {n} worker processes"):
            cls(_data(), num_workers=n)
