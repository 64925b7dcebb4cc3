"""replace_pattern against torch 2.13: the same rewrite gives the same code and values."""

import numpy as np
import pytest
import torch as th
import torch.fx  # noqa: F401
import torch.fx.subgraph_rewriter  # noqa: F401

import shardflow as sf
import shardflow.fx as fx


def _model(lib):
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

    def pattern(w1, w2):
        return lib.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return lib.stack([w1, w2])

    return M(), pattern, replacement


def test_replace_pattern_as_torch():
    results = []
    for lib, fxm in ((sf, fx), (th, th.fx)):
        model, pattern, replacement = _model(lib)
        gm = fxm.symbolic_trace(model)
        matches = fxm.replace_pattern(gm, pattern, replacement)
        gm.graph.lint()
        x, w = lib.tensor([1.0]), lib.tensor([[1.0, -2.0], [3.0, 0.5]])
        results.append((gm.code, [sorted(n.name for n in m.nodes_map.values()) for m in matches],
                        [m.anchor.name for m in matches], float(gm(x, w, w * 2))))
    assert results[0][:3] == results[1][:3]
    np.testing.assert_allclose(results[0][3], results[1][3])
    assert results[0][2] == ["sum_1", "sum_1"]  # the pattern's result node, as torch's


def test_match_kept_only_when_its_inner_values_stay_inside():
    def f(x):
        y = x.relu()
        return y.neg() + y  # y is used outside the pattern (neg of relu): no match

    def pattern(x):
        return x.relu().neg()

    def replacement(x):
        return x.abs()

    for fxm in (fx, th.fx):
        gm = fxm.symbolic_trace(f)
        assert fxm.replace_pattern(gm, pattern, replacement) == []


def test_pattern_mismatch_errors():
    gm = fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(ValueError, match="same parameters"):
        fx.replace_pattern(gm, lambda x: x + 1, lambda x, y: x)
    with pytest.raises(NotImplementedError, match="one traced value"):
        fx.replace_pattern(gm, lambda x: (x + 1, x), lambda x: (x, x))


def test_constants_must_be_equal_to_match():
    def f(x):
        return x * 2 + x * 3

    gm = fx.symbolic_trace(f)
    matches = fx.replace_pattern(gm, lambda x: x * 3, lambda x: x * 4)
    assert len(matches) == 1 and float(gm(sf.tensor(1.0))) == 6.0
