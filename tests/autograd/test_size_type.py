"""``Tensor.shape`` is a Size whose slices, sums and repeats stay Sizes, as torch.Size's
(``x.shape[1:]`` printed ``(3,)`` where torch prints ``torch.Size([3])``)."""
import pickle

import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("expr", ["s[1:]", "s[::-1]", "s + (5,)", "(1,) + s", "s * 2", "2 * s", "s + s",
                                  "s[0]", "s[-1]", "s.count(2)", "s.index(3)", "s[1:] == (3, 4)",
                                  "s[1:].numel()", "len(s[:0])"])
def test_size_operations_as_torch(expr):
    got = eval(expr, {"s": sf.ones(2, 3, 4).shape})
    want = eval(expr, {"s": torch.ones(2, 3, 4).shape})
    assert type(got).__name__ == type(want).__name__ and got == want
    assert repr(got).replace("shardflow", "torch") == repr(want)


def test_size_errors_and_pickle():
    s = sf.ones(2, 3).shape
    with pytest.raises(TypeError):
        s + [1]
    back = pickle.loads(pickle.dumps(s[1:]))
    assert type(back) is sf.Size and back == (3,)
