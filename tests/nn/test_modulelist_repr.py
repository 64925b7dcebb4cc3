"""``repr`` of a ``ModuleList`` against PyTorch's: runs of consecutive children with equal
reprs print once, ``(0-1): 2 x TransformerEncoderLayer(...)`` (what ``print(model)`` shows
for pytorch/examples' word_language_model TransformerModel)."""

import pytest
import torch

import shardflow as sf


def _lists(lib):
    nn = lib.nn
    return {
        "empty": nn.ModuleList(),
        "one": nn.ModuleList([nn.Linear(2, 3)]),
        "runs": nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 3),
                               nn.ReLU(), nn.ReLU(), nn.Linear(2, 2)]),
        "same_object_twice": nn.ModuleList([nn.Tanh()] * 2),
        "nested": nn.ModuleList([nn.ModuleList([nn.ReLU(), nn.ReLU()]), nn.Sequential(nn.ReLU(), nn.ReLU())]),
        "encoder": nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False),
        "model": nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)),  # Sequential does not compress
    }


@pytest.mark.parametrize("case", sorted(_lists(torch)))
def test_modulelist_repr_matches_torch(case):
    assert repr(_lists(sf)[case]) == repr(_lists(torch)[case])


def test_a_run_is_labelled_by_its_positions():
    text = repr(sf.nn.ModuleList([sf.nn.ReLU(), sf.nn.Tanh(), sf.nn.Tanh(), sf.nn.Tanh()]))
    assert text == "ModuleList(\n  (0): ReLU()\n  (1-3): 3 x Tanh()\n)"
