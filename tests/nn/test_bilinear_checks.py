"""``F.bilinear`` / ``nn.Bilinear`` refuse what torch refuses, with torch's messages
(session 40, compat-audio): shardflow's einsum broadcast an unbatched input against a
batched one (a value where torch raises) and failed the others with einsum's message."""

import pytest
import torch

import shardflow as sf

CASES = [
    ((3,), (2, 4), (2, 3, 4), None),  # torch: "input dimensions do not match"
    ((2, 3), (3, 4), (2, 3, 4), None),  # batch dimensions
    ((2, 2, 3), (2, 3, 4), (2, 3, 4), None),
    ((2, 5), (2, 4), (2, 3, 4), None),  # input1 features
    ((2, 3), (2, 5), (2, 3, 4), None),  # input2 features
    ((2, 3), (2, 4), (2, 3, 4), (3,)),  # bias
    ((2, 3), (2, 4), (2, 3), None),  # a 2-d weight: IndexError
]


@pytest.mark.parametrize("shapes", CASES)
def test_refusals_like_torch(shapes):
    a, b, w, bias = shapes
    got = []
    for lib in (torch, sf):
        with pytest.raises((RuntimeError, IndexError)) as caught:
            lib.nn.functional.bilinear(lib.ones(a), lib.ones(b), lib.ones(w),
                                       None if bias is None else lib.ones(bias))
        got.append((type(caught.value), str(caught.value)))
    assert got[1] == got[0]


def test_unbatched_and_batched_still_compute():
    for a, b in (((3,), (4,)), ((5, 2, 3), (5, 2, 4))):
        want = torch.nn.functional.bilinear(torch.ones(a), torch.ones(b) * 2, torch.ones(2, 3, 4), torch.ones(2))
        got = sf.nn.functional.bilinear(sf.ones(a), sf.ones(b) * 2, sf.ones(2, 3, 4), sf.ones(2))
        assert got.tolist() == want.tolist()
