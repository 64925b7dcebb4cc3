"""DataLoader: order, coverage, workers, failures, collate (reference: torch.utils.data)."""

import multiprocessing as mp
import os
import signal
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import shardflow as sf
from shardflow.utils import data as sfd


class Squares(sfd.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i, i * i], dtype=np.float32), i


def _epoch(loader):
    return [b[1].tolist() for b in loader]


@pytest.mark.parametrize("shuffle", [False, True])
def test_every_sample_once_same_order_across_num_workers(shuffle):
    ds = Squares(23)
    orders = {}
    for nw in (0, 1, 2, 3):
        g = sf.Generator().manual_seed(7)
        dl = sfd.DataLoader(ds, batch_size=4, shuffle=shuffle, num_workers=nw, generator=g)
        epochs = [_epoch(dl), _epoch(dl)]
        for batches in epochs:
            flat = [i for b in batches for i in b]
            assert sorted(flat) == list(range(23))  # every sample exactly once
            assert [len(b) for b in batches] == [4] * 5 + [3]
        orders[nw] = epochs
    for nw in (1, 2, 3):
        assert orders[nw] == orders[0]
    if shuffle:
        assert orders[0][0] != orders[0][1]  # a new permutation each epoch
    else:
        assert [i for b in orders[0][0] for i in b] == list(range(23))


def test_batch_contents_and_dtypes_match_torch():
    ds = Squares(10)
    ours = list(sfd.DataLoader(ds, batch_size=4, num_workers=2))
    theirs = list(tud.DataLoader(ds, batch_size=4))
    assert len(ours) == len(theirs) == 3
    for (x, y), (tx, ty) in zip(ours, theirs):
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
        assert x.dtype == sf.float32 and y.dtype == sf.int64


def test_drop_last_and_len():
    ds = Squares(10)
    for bs, dl_ in [(3, False), (3, True), (5, True), (4, False)]:
        ours = sfd.DataLoader(ds, batch_size=bs, drop_last=dl_)
        theirs = tud.DataLoader(ds, batch_size=bs, drop_last=dl_)
        assert len(ours) == len(theirs)
        assert _epoch(ours) == [b[1].tolist() for b in theirs]


def test_persistent_workers_draw_as_torchs():
    """Shuffled epochs are torch's, with and without persistent workers (a persistent iterator
    draws its workers' base seed once, so its later epochs differ from fresh iterators', as in
    torch), and an abandoned epoch leaves no stale batches behind."""
    ds = Squares(17)
    runs = []
    for lib, data in ((torch, tud), (sf, sfd)):
        a = data.DataLoader(ds, batch_size=3, shuffle=True, num_workers=2, persistent_workers=True,
                            generator=lib.Generator().manual_seed(3))
        b = data.DataLoader(ds, batch_size=3, shuffle=True, num_workers=0,
                            generator=lib.Generator().manual_seed(3))
        epochs = [(_epoch(a), _epoch(b)) for _ in range(3)]
        it = iter(a)
        next(it)
        epochs.append((_epoch(a), _epoch(b)))
        runs.append(epochs)
    assert runs[1] == runs[0]
    flat = [i for batch in runs[1][-1][0] for i in batch]
    assert sorted(flat) == list(range(17))  # the abandoned epoch's batches are gone


class Stream(sfd.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = sfd.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("nw", [0, 2, 3])
def test_iterable_dataset_split_by_worker_info(nw):
    dl = sfd.DataLoader(Stream(20), batch_size=3, num_workers=nw)
    got = [i for b in dl for i in b.tolist()]
    assert sorted(got) == list(range(20))
    got2 = [i for b in dl for i in b.tolist()]
    assert got == got2


class Crashing(Squares):
    def __getitem__(self, i):
        if i == 9:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


def test_killed_worker_is_reported_with_id_and_exit_code():
    dl = sfd.DataLoader(Crashing(16), batch_size=2, num_workers=2)
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid \d+\) is killed by signal: "
                                           r"Killed\. \(worker 0, exit code -9, SIGKILL"):
        list(dl)


class Raising(Squares):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad sample 5")
        return super().__getitem__(i)


@pytest.mark.parametrize("nw", [0, 2])
def test_worker_exception_reraised_with_traceback(nw):
    dl = sfd.DataLoader(Raising(10), batch_size=2, num_workers=nw)
    with pytest.raises(ValueError, match="bad sample 5") as ei:
        list(dl)
    if nw:
        assert "DataLoader worker process 0" in str(ei.value)
        assert "Raising" in str(ei.value) or "__getitem__" in str(ei.value)


class Hanging(Squares):
    def __getitem__(self, i):
        if i == 3:
            time.sleep(60)
        return super().__getitem__(i)


def test_hanging_worker_times_out_naming_worker():
    # 4 s: the batches before the hanging one arrive well within it on a loaded machine
    dl = sfd.DataLoader(Hanging(8), batch_size=1, num_workers=2, timeout=4.0)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"timed out after 4.0 seconds waiting for batch 3 from worker 1"):
        list(dl)
    assert time.monotonic() - t0 < 20


class Counting(Squares):
    def __init__(self, n, counter):
        super().__init__(n)
        self.counter = counter

    def __getitem__(self, i):
        with self.counter.get_lock():
            self.counter.value += 1
        return super().__getitem__(i)


def test_workers_prefetch_in_background():
    counter = mp.get_context("fork").Value("i", 0)
    dl = sfd.DataLoader(Counting(40, counter), batch_size=2, num_workers=2, prefetch_factor=3)
    it = iter(dl)
    next(it)
    deadline = time.monotonic() + 10
    while counter.value < 2 * 2 * 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # "compute": the workers keep loading meanwhile
    # prefetch_factor * num_workers batches in flight (+1 refilled after the first next())
    assert counter.value >= 2 * 2 * 3
    assert counter.value <= 2 * (2 * 3 + 1)
    rest = [b[1].tolist() for b in it]
    assert len(rest) == 19


class Noisy(Squares):
    def __getitem__(self, i):
        return float(np.random.rand() + sf.rand(1).item()), i


def test_worker_seeds_make_random_augmentation_repeatable():
    def run(seed):
        dl = sfd.DataLoader(Noisy(12), batch_size=3, num_workers=2,
                            generator=sf.Generator().manual_seed(seed))
        return [b[0].tolist() for b in dl]

    assert run(1) == run(1)
    assert run(1) != run(2)
    seen = []

    def init(wid):
        seen.append(wid)  # runs in the worker; just must not fail
        assert sfd.get_worker_info().id == wid

    list(sfd.DataLoader(Squares(4), batch_size=1, num_workers=2, worker_init_fn=init))


def test_default_collate_matches_torch():
    batch = [
        {"x": np.ones((2, 3), np.float32) * i, "y": i, "w": float(i) / 2, "name": f"s{i}",
         "pair": (np.int32(i), np.arange(2))}
        for i in range(4)
    ]
    ours = sfd.default_collate(batch)
    theirs = tud.default_collate(batch)
    for k in ("x", "y", "w"):
        np.testing.assert_array_equal(ours[k].numpy(), theirs[k].numpy())
        assert str(ours[k].dtype).split(".")[-1] == str(theirs[k].dtype).split(".")[-1]
    assert ours["name"] == theirs["name"]
    assert type(ours["pair"]) is type(theirs["pair"])
    for a, b in zip(ours["pair"], theirs["pair"], strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    t = [sf.tensor([1.0, 2.0]), sf.tensor([3.0, 4.0])]
    np.testing.assert_array_equal(sfd.default_collate(t).numpy(), [[1, 2], [3, 4]])
    with pytest.raises(RuntimeError, match="same shape"):
        sfd.default_collate([np.zeros(2), np.zeros(3)])


def test_pad_collate_pads_to_longest():
    out = sfd.pad_collate([np.array([1, 2, 3]), np.array([4])], padding_value=-1)
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 3], [4, -1, -1]])


def test_tensor_dataset_and_batch_none():
    x = sf.tensor(np.arange(12.0).reshape(6, 2))
    y = sf.tensor(np.arange(6))
    ds = sfd.TensorDataset(x, y)
    batches = list(sfd.DataLoader(ds, batch_size=4))
    np.testing.assert_array_equal(batches[0][0].numpy(), x.numpy()[:4])
    items = list(sfd.DataLoader(Squares(3), batch_size=None))  # no batching: converted only
    ref = list(tud.DataLoader(Squares(3), batch_size=None))  # [[tensor([i, i*i]), i], ...]
    assert [type(it) for it in items] == [type(it) for it in ref]
    assert all(isinstance(a, sf.Tensor) and type(i) is int for a, i in items)
    assert [(a.numpy().tolist(), i) for a, i in items] == [(a.numpy().tolist(), i) for a, i in ref]
    with pytest.raises(ValueError, match="same first dimension"):
        sfd.TensorDataset(x, sf.tensor(np.arange(5)))


def test_argument_validation_like_torch():
    ds = Squares(4)
    bs = sfd.BatchSampler(sfd.SequentialSampler(ds), 2, False)
    with pytest.raises(ValueError, match="mutually exclusive"):
        sfd.DataLoader(ds, batch_sampler=bs, batch_size=2)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        sfd.DataLoader(ds, sampler=sfd.SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="num_workers"):
        sfd.DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor"):
        sfd.DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        sfd.DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="shuffle"):
        sfd.DataLoader(Stream(3), shuffle=True)
    assert [b[1].tolist() for b in sfd.DataLoader(ds, batch_sampler=bs)] == [[0, 1], [2, 3]]


def test_auto_shard_under_data_parallel(monkeypatch):
    from shardflow.data import _world

    ds = Squares(10)
    seen = []
    for rank in (0, 1):
        monkeypatch.setattr(_world, "world", lambda r=rank: (r, 2))
        dl = sfd.DataLoader(ds, batch_size=2, shuffle=True, generator=sf.Generator().manual_seed(0))
        assert len(dl) == 5  # not sharded: no data-parallel wrapper announced
        dl = sfd.DataLoader(ds, batch_size=2, shuffle=True, auto_shard=True)
        assert len(dl) == 3  # 5 samples per rank
        e0, e1 = _epoch(dl), _epoch(dl)
        assert e0 != e1  # set_epoch advanced automatically
        seen.append([i for b in e0 for i in b])
        with_sampler = sfd.DataLoader(ds, batch_size=2, sampler=sfd.SequentialSampler(ds),
                                      auto_shard=True)
        assert len(with_sampler) == 5  # a user sampler is never replaced
    assert sorted(seen[0] + seen[1]) == list(range(10))
    monkeypatch.setattr(_world, "world", lambda: (0, 2))
    sfd.note_data_parallel(True)
    try:
        assert len(sfd.DataLoader(ds, batch_size=2)) == 3
        assert len(sfd.DataLoader(ds, batch_size=2, auto_shard=False)) == 5
    finally:
        sfd.note_data_parallel(False)

