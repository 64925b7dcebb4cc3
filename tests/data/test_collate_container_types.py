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
