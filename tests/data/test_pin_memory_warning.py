"""``DataLoader(pin_memory=True)`` without an accelerator warns as torch 2.13 does, once per
new iterator (found by pytorch/examples imagenet/main.py, tests/parity/test_public_programs_more_l.py)."""

import warnings

import pytest
import torch

import shardflow
from shardflow.backend import cuda_is_available


def _warnings(lib, **kwargs):
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        loader = lib.utils.data.DataLoader(list(range(4)), batch_size=2, **kwargs)
        made = len(warned)
        batches = [b.tolist() for b in loader]
        list(loader)
    return made, [(w.category, str(w.message)) for w in warned], batches


@pytest.mark.skipif(cuda_is_available() or torch.cuda.is_available(), reason="the warning is for a machine with no accelerator")
@pytest.mark.parametrize("pin", [True, False])
def test_pin_memory_without_accelerator_warns_like_torch(pin):
    th = _warnings(torch, pin_memory=pin)
    sf = _warnings(shardflow, pin_memory=pin)
    assert sf == th
    assert th[0] == 0 and len(th[1]) == (2 if pin else 0)
    if pin:
        assert th[1][0] == (UserWarning, "'pin_memory' argument is set as true but no accelerator is found, "
                                         "then device pinned memory won't be used.")
