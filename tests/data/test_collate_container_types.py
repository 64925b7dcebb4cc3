"""``default_collate`` keeps PyTorch's container types: strings come back as the batch they
were given (a tuple when they are a field of tuple or namedtuple samples), a mapping keeps its
type (OrderedDict), checked against torch 2.13."""

import collections

import numpy as np
import pytest
import torch

import shardflow

P = collections.namedtuple("P", "x y")

BATCHES = {
    "namedtuple with a string field": [P(1.0, "s"), P(2.0, "t")],
    "tuples of string and int": [("a", 1), ("b", 2)],
    "lists of int and string": [[1, "a"], [2, "b"]],
    "dicts with a string value": [{"k": "a", "v": np.ones(2)}, {"k": "b", "v": np.zeros(2)}],
    "OrderedDicts": [collections.OrderedDict(a=1, b="x"), collections.OrderedDict(a=2, b="y")],
    "strings": ["a", "b"],
}


@pytest.mark.parametrize("name", list(BATCHES))
def test_default_collate_container_types_match_torch(name):
    batch = BATCHES[name]
    ours = shardflow.utils.data.default_collate(batch)
    theirs = torch.utils.data.default_collate(batch)
    assert repr(ours).replace("shardflow", "torch") == repr(theirs)
    assert type(ours) is type(theirs)


def test_a_dataloader_over_tuple_samples_gives_tuple_string_fields():
    data = [("a", 1), ("b", 2), ("c", 3)]
    ours = list(shardflow.utils.data.DataLoader(data, batch_size=2))
    theirs = list(torch.utils.data.DataLoader(data, batch_size=2))
    assert [b[0] for b in ours] == [b[0] for b in theirs] == [("a", "b"), ("c",)]


class _RaisesKeyError(shardflow.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("missing key 2")
        return shardflow.ones(2)


def test_a_key_error_in_a_worker_reads_as_torchs():
    # torch: str(e) is the readable message ("Caught KeyError in DataLoader worker process 0.
    # ... KeyError: 'missing key 2'"), not the repr of a nested KeyError
    loader = shardflow.utils.data.DataLoader(_RaisesKeyError(), batch_size=1, num_workers=1)
    with pytest.raises(KeyError) as info:
        list(loader)
    lines = str(info.value).splitlines()
    assert lines[0].startswith("Caught KeyError") and "DataLoader worker process 0" in lines[0]
    assert lines[-1] == "KeyError: 'missing key 2'"
