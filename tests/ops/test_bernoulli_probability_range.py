"""``bernoulli(probs)`` and ``t.bernoulli_(probs)`` refuse a probability outside [0, 1] or NaN
with torch's RuntimeError (the draw compared a uniform with it: p > 1 silently gave 1, p < 0
and NaN 0), and ``bernoulli(t, p=number)`` refuses a number outside [0, 1] as
``bernoulli_`` does. In-range draws are unchanged (torch's, from the same seed)."""

import numpy as np
import pytest
import torch

import shardflow

BAD = {
    "above_one": lambda lib: lib.bernoulli(lib.tensor([0.5, 1.2])),
    "negative": lambda lib: lib.bernoulli(lib.tensor([0.5, -0.2])),
    "nan": lambda lib: lib.bernoulli(lib.tensor([0.5, float("nan")])),
    "inplace_tensor_p": lambda lib: lib.zeros(2).bernoulli_(lib.tensor([0.5, 1.2])),
    "float64": lambda lib: lib.bernoulli(lib.tensor([[0.1], [1.5]], dtype=lib.float64)),
}


@pytest.mark.parametrize("name", list(BAD))
def test_probability_outside_zero_one_raises_like_torch(name):
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match=r"Expected p_in >= 0 && p_in <= 1 to be true, but got false"):
            BAD[name](lib)


def test_number_p_outside_zero_one_raises_like_torch():
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.2"):
            lib.bernoulli(lib.zeros(2), p=1.2)


def test_in_range_draws_stay_torchs():
    draws = []
    for lib in (torch, shardflow):
        lib.manual_seed(7)
        p = lib.tensor([0.0, 1.0, 0.3, 0.7, 0.5, 0.5])
        draws.append((lib.bernoulli(p).numpy(), lib.zeros(6).bernoulli_(p).numpy(),
                      lib.bernoulli(lib.zeros(0)).numpy().shape))
    for s, t in zip(draws[1], draws[0], strict=True):
        np.testing.assert_array_equal(s, t)
