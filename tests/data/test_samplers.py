"""Samplers vs torch.utils.data and by their defining properties."""

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import shardflow as sf
from shardflow.utils import data as sfd


@pytest.mark.parametrize("n", [7, 10, 11])
@pytest.mark.parametrize("R", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_partitions(n, R, drop_last):
    ds = list(range(n))
    for shuffle in (False, True):
        parts = [list(sfd.DistributedSampler(ds, R, r, shuffle=shuffle, seed=5, drop_last=drop_last))
                 for r in range(R)]
        lens = {len(p) for p in parts}
        assert len(lens) == 1  # every rank gets the same number of samples
        flat = [i for p in parts for i in p]
        if drop_last:
            assert len(set(flat)) == len(flat) == (n // R) * R  # disjoint
        else:
            assert set(flat) == set(range(n))  # covering
            assert len(flat) == -(-n // R) * R  # padded by at most R - 1 repeats
            assert len(flat) - len(set(flat)) == len(flat) - n
        if not shuffle:  # torch's algorithm without RNG: identical indices
            ref = [list(tud.DistributedSampler(ds, R, r, shuffle=False, drop_last=drop_last))
                   for r in range(R)]
            assert parts == ref


def test_distributed_sampler_set_epoch_same_on_every_rank():
    ds = list(range(20))
    a = [sfd.DistributedSampler(ds, 2, r, seed=1) for r in range(2)]
    e0 = [list(s) for s in a]
    for s in a:
        s.set_epoch(1)
    e1 = [list(s) for s in a]
    assert e0 != e1
    assert sorted(e1[0] + e1[1]) == list(range(20))
    b = sfd.DistributedSampler(ds, 2, 0, seed=1)  # a fresh sampler with the same seed agrees
    assert list(b) == e0[0]
    with pytest.raises(ValueError, match="rank"):
        sfd.DistributedSampler(ds, 2, 2)


def test_random_sampler_replacement_and_num_samples():
    g = sf.Generator().manual_seed(0)
    s = sfd.RandomSampler(range(5), replacement=True, num_samples=50, generator=g)
    out = list(s)
    assert len(out) == 50 and set(out) <= set(range(5)) and len(set(out)) == 5
    s = sfd.RandomSampler(range(5), num_samples=12, generator=g)
    out = list(s)
    assert len(out) == 12 and sorted(out[:10]) == sorted(list(range(5)) * 2)
    sf.manual_seed(3)
    a = list(sfd.RandomSampler(range(10)))
    sf.manual_seed(3)
    assert list(sfd.RandomSampler(range(10))) == a
    with pytest.raises(ValueError, match="num_samples"):
        sfd.RandomSampler(range(3), num_samples=0)


@pytest.mark.parametrize("bs,drop", [(3, False), (3, True), (4, False), (10, True)])
def test_batch_sampler_matches_torch(bs, drop):
    ours = list(sfd.BatchSampler(sfd.SequentialSampler(range(10)), bs, drop))
    theirs = list(tud.BatchSampler(tud.SequentialSampler(range(10)), bs, drop))
    assert ours == theirs
    assert len(sfd.BatchSampler(range(10), bs, drop)) == len(theirs)


def test_bucket_batch_sampler_groups_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 200, size=1000)
    s = sfd.BucketBatchSampler(lengths, batch_size=16, bucket_size_multiplier=20, seed=0)
    batches = list(s)
    assert len(batches) == len(s)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(1000))  # every index once

    def padding(bs):
        return sum(lengths[b].max() * len(b) - lengths[b].sum() for b in bs)

    random_batches = [list(range(i, min(i + 16, 1000))) for i in range(0, 1000, 16)]
    assert padding(batches) < 0.2 * padding(random_batches)
    s.set_epoch(1)
    assert list(s) != batches
    parts = [list(sfd.BucketBatchSampler(lengths, 16, 20, seed=0, num_replicas=3, rank=r))
             for r in range(3)]
    assert len({len(p) for p in parts}) == 1
    assert {i for p in parts for b in p for i in b} == set(range(1000))


def test_random_split_lengths_like_torch():
    ds = list(range(10))
    for lengths in ([3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.25, 0.25]):
        ours = sfd.random_split(ds, lengths, generator=sf.Generator().manual_seed(0))
        theirs = tud.random_split(ds, lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        assert sorted(i for s in ours for i in s) == ds
    with pytest.raises(ValueError, match="does not equal"):
        sfd.random_split(ds, [3, 3])


def test_subset_concat():
    a, b = list(range(5)), list(range(10, 13))
    c = sfd.ConcatDataset([a, b])
    assert [c[i] for i in range(len(c))] == a + b
    assert c[-1] == 12
    s = sfd.Subset(c, [6, 0])
    assert [s[0], s[1]] == [11, 0] and len(s) == 2
