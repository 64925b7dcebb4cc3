"""nn.Module extras against torch 2.13: extra state, state_dict pre-hooks, set_submodule."""
import pytest
import torch

import shardflow as sf


def _counter_cls(nn):
    class Counter(nn.Module):
        """A Linear with a Python counter saved as extra state."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.count = 0

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    return Counter


def _wrap(nn):
    outer = nn.Sequential(_counter_cls(nn)(), nn.ReLU())
    outer[0].count = 7
    return outer


def test_extra_state_keys_and_round_trip_match_torch():
    ours, ref = _wrap(sf.nn), _wrap(torch.nn)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert ours.state_dict()["0._extra_state"] == ref.state_dict()["0._extra_state"] == {"count": 7}
    fresh, fresh_ref = _wrap(sf.nn), _wrap(torch.nn)
    fresh[0].count = fresh_ref[0].count = 0
    res = fresh.load_state_dict(ours.state_dict())
    res_ref = fresh_ref.load_state_dict(ref.state_dict())
    assert fresh[0].count == fresh_ref[0].count == 7
    assert (res.missing_keys, res.unexpected_keys) == (res_ref.missing_keys, res_ref.unexpected_keys) == ([], [])


def test_missing_extra_state_is_a_strict_error_as_torch():
    ours, ref = _wrap(sf.nn), _wrap(torch.nn)
    sd, sd_ref = ours.state_dict(), ref.state_dict()
    del sd["0._extra_state"], sd_ref["0._extra_state"]
    with pytest.raises(RuntimeError, match="Missing key.*0._extra_state"):
        ours.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="Missing key.*0._extra_state"):
        ref.load_state_dict(sd_ref)
    res, res_ref = ours.load_state_dict(sd, strict=False), ref.load_state_dict(sd_ref, strict=False)
    assert res.missing_keys == res_ref.missing_keys == ["0._extra_state"]
    assert ours[0].count == 7  # untouched


def test_extra_state_key_without_set_extra_state_is_unexpected():
    for nn in (sf.nn, torch.nn):
        m = nn.Sequential(nn.Linear(2, 2))
        sd = dict(m.state_dict())
        sd["0._extra_state"] = 1
        with pytest.raises(RuntimeError, match='Unexpected key.*"0._extra_state"'):
            m.load_state_dict(sd)


def test_default_get_extra_state_raises():
    for nn in (sf.nn, torch.nn):
        with pytest.raises(RuntimeError):
            nn.Linear(2, 2).get_extra_state()
        assert "_extra_state" not in "".join(nn.Linear(2, 2).state_dict())


def test_state_dict_pre_hook_called_with_prefix_and_removable():
    calls = {"sf": [], "torch": []}
    for tag, nn in (("sf", sf.nn), ("torch", torch.nn)):
        m = nn.Sequential(nn.Linear(2, 2))
        h = m[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars, tag=tag: calls[tag].append(
            (type(mod).__name__, prefix, keep_vars)))
        m.state_dict(keep_vars=True)
        h.remove()
        m.state_dict()
    assert calls["sf"] == calls["torch"] == [("Linear", "0.", True)]


def test_state_dict_post_hook_aliases_exist():
    m = sf.nn.Linear(2, 2)
    seen = []
    h = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: seen.append(sorted(sd)))
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: seen.append("legacy"))
    m.state_dict()
    h.remove()
    assert seen == [["bias", "weight"], "legacy"]


def test_set_submodule_matches_torch():
    for nn in (sf.nn, torch.nn):
        m = nn.Sequential(nn.Sequential(nn.Linear(2, 2)), nn.ReLU())
        m.set_submodule("0.0", nn.Identity())
        assert type(m[0][0]).__name__ == "Identity"
        m.set_submodule("0.extra", nn.Tanh())  # strict=False adds
        assert type(m[0].extra).__name__ == "Tanh"
        with pytest.raises(AttributeError, match="has no attribute `new`"):
            m.set_submodule("0.new", nn.Tanh(), strict=True)
        with pytest.raises(ValueError, match="Cannot set the submodule without a target name"):
            m.set_submodule("", nn.Tanh())
        with pytest.raises(ValueError, match="is not an nn.Module"):
            m.set_submodule("1", 3)
        m.attr = 5
        with pytest.raises(AttributeError, match="`attr` is not an nn.Module"):
            m.set_submodule("attr", nn.Tanh())


def _mlp(seed):
    sf.manual_seed(seed)
    return sf.nn.Sequential(sf.nn.Linear(4, 8), sf.nn.GELU(), sf.nn.Linear(8, 3))


def test_compile_in_place_matches_eager_over_training_steps():
    import numpy as np

    eager, compiled = _mlp(0), _mlp(0)
    compiled.load_state_dict(eager.state_dict())
    # in place, as torch's Module.compile() (returns None); torch's own is not called here:
    # it imports torch._dynamo, which turns torch.distributions' argument validation off for
    # the whole process (the distributions tests then saw torch accept bad parameters)
    assert compiled.compile() is None
    assert list(compiled.state_dict()) == list(eager.state_dict())  # no _orig_mod. prefix
    opts = [sf.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled)]
    x = sf.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    for _ in range(3):
        outs = []
        for m, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            y = m(x)
            (y ** 2).mean().backward()
            opt.step()
            outs.append(y.detach().numpy())
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
    for pe, pc in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
    stats = compiled.forward.stats  # really compiled: traced once per guard, replayed, never eager
    assert stats["traces"] >= 1 and stats["replays"] >= 1 and stats["eager"] == 0, stats
    seen = []
    compiled.register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    compiled.eval()
    with sf.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), eager.eval()(x).numpy(), rtol=1e-5, atol=1e-6)
    assert seen == [(5, 3)]


def test_compile_takes_torch_compile_arguments():
    m = _mlp(1)
    m.compile(disable=True)
    assert "forward" not in m.__dict__  # disabled: eager
    with pytest.raises(TypeError):
        m.compile(not_an_option=1)
    m.compile(fullgraph=True, mode="reduce-overhead")
    assert m(sf.ones(2, 4)).shape == (2, 3)
