"""``torch.nn.utils.prune`` against torch: the same masks from the same weights, the
``weight_orig``/``weight_mask`` layout and state-dict keys, training steps through the mask,
iterative pruning, ``remove``, and torch's errors."""

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import shardflow as sf
import shardflow.nn.utils.prune as sprune


def _models(shape=(6, 4)):
    """A Linear in each framework with the same distinct weights."""
    rng = np.random.default_rng(0)
    w = rng.permutation(np.arange(1, shape[0] * shape[1] + 1)).reshape(shape).astype(np.float32) / 10
    w *= rng.choice([-1, 1], size=shape)
    b = rng.standard_normal(shape[0]).astype(np.float32)
    t = torch.nn.Linear(shape[1], shape[0])
    s = sf.nn.Linear(shape[1], shape[0])
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        t.bias.copy_(torch.tensor(b))
    s.load_state_dict({"weight": sf.tensor(w), "bias": sf.tensor(b)})
    return t, s


def _same(s_tensor, t_tensor):
    np.testing.assert_array_equal(s_tensor.detach().numpy(), t_tensor.detach().numpy())


@pytest.mark.parametrize("apply", [
    lambda p, m: p.l1_unstructured(m, "weight", amount=0.4),
    lambda p, m: p.l1_unstructured(m, "weight", amount=7),
    lambda p, m: p.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
    lambda p, m: p.ln_structured(m, "weight", amount=1, n=1, dim=1),
    lambda p, m: p.ln_structured(m, "weight", amount=2, n=float("inf"), dim=-1),
    lambda p, m: p.identity(m, "weight"),
    lambda p, m: p.l1_unstructured(m, "bias", amount=0.5),
])
def test_masks_and_layout_match_torch(apply):
    t, s = _models()
    apply(tprune, t)
    apply(sprune, s)
    assert list(s.state_dict()) == list(t.state_dict())
    assert [n for n, _ in s.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in s.named_buffers()] == [n for n, _ in t.named_buffers()]
    name = next(n for n, _ in t.named_buffers())[:-len("_mask")]
    _same(getattr(s, name + "_mask"), getattr(t, name + "_mask"))
    _same(getattr(s, name), getattr(t, name))
    assert sprune.is_pruned(s) and tprune.is_pruned(t)
    assert not isinstance(getattr(s, name), sf.nn.Parameter)


def test_training_through_the_mask_matches_torch():
    t, s = _models()
    tprune.l1_unstructured(t, "weight", amount=0.5)
    sprune.l1_unstructured(s, "weight", amount=0.5)
    t_opt = torch.optim.SGD(t.parameters(), lr=0.1)
    s_opt = sf.optim.SGD(s.parameters(), lr=0.1)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for _ in range(3):
        for m, opt, lib in ((t, t_opt, torch), (s, s_opt, sf)):
            opt.zero_grad()
            m(lib.tensor(x)).square().mean().backward()
            opt.step()
        _same(s.weight_orig.grad == 0, t.weight_orig.grad == 0)  # no gradient where pruned
        np.testing.assert_allclose(s.weight_orig.detach().numpy(), t.weight_orig.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_iterative_pruning_uses_a_container_like_torch():
    t, s = _models()
    for p, m in ((tprune, t), (sprune, s)):
        p.l1_unstructured(m, "weight", amount=0.25)
        p.ln_structured(m, "weight", amount=2, n=2, dim=0)  # channels over what is left
        p.l1_unstructured(m, "weight", amount=3)
    _same(s.weight_mask, t.weight_mask)
    hooks = [h for h in s._forward_pre_hooks.values() if isinstance(h, sprune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], sprune.PruningContainer) and len(hooks[0]) == 3
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "LnStructured", "L1Unstructured"]


def test_global_unstructured_and_custom_mask_match_torch():
    (t1, s1), (t2, s2) = _models(), _models((3, 4))
    with torch.no_grad():
        t2.weight.mul_(5)
    s2.weight.data = s2.weight.data * 5
    for p, a, b in ((tprune, t1, t2), (sprune, s1, s2)):
        p.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=p.L1Unstructured, amount=10)
    _same(s1.weight_mask, t1.weight_mask)
    _same(s2.weight_mask, t2.weight_mask)
    zeros = int((s1.weight_mask == 0).sum().item()) + int((s2.weight_mask == 0).sum().item())
    assert zeros == 10 and int((s2.weight_mask == 0).sum().item()) < 5  # the 10 smallest overall, mostly layer 1
    mask = (np.arange(24).reshape(6, 4) % 3 == 0).astype(np.float32)
    t, s = _models()
    tprune.custom_from_mask(t, "weight", torch.tensor(mask))
    sprune.custom_from_mask(s, "weight", sf.tensor(mask))
    _same(s.weight, t.weight)


def test_remove_makes_pruning_permanent_like_torch():
    t, s = _models()
    for p, m in ((tprune, t), (sprune, s)):
        p.l1_unstructured(m, "weight", amount=0.5)
        p.remove(m, "weight")
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight"]  # re-registered last, as torch
    assert isinstance(s.weight, sf.nn.Parameter) and not sprune.is_pruned(s)
    _same(s.weight, t.weight)
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned before pruning can be removed"):
        sprune.remove(s, "weight")


def test_state_dict_round_trip_of_a_pruned_model():
    t, s = _models()
    tprune.l1_unstructured(t, "weight", amount=0.5)
    _, fresh = _models()
    sprune.identity(fresh, "weight")  # the same layout, an all-ones mask
    fresh.load_state_dict({k: sf.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.ones((2, 4), dtype=np.float32)
    np.testing.assert_allclose(fresh(sf.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_random_methods_prune_the_amount():
    _, s = _models()
    sprune.random_unstructured(s, "weight", amount=0.25)
    assert int((s.weight_mask == 0).sum().item()) == 6
    _, s = _models()
    sprune.random_structured(s, "weight", amount=2, dim=0)
    rows = s.weight_mask.numpy().sum(axis=1)
    assert sorted(rows.tolist()) == [0, 0, 4, 4, 4, 4]


def test_bad_arguments_raise_like_torch():
    for p, lib in ((tprune, torch), (sprune, sf)):
        m = lib.nn.Linear(4, 3)
        with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range \[0, 1\]"):
            p.l1_unstructured(m, "weight", amount=1.5)
        with pytest.raises(TypeError, match="Invalid type for amount"):
            p.l1_unstructured(m, "weight", amount="half")
        with pytest.raises(ValueError, match="amount=20 should be smaller than the number of parameters to prune=12"):
            p.l1_unstructured(m, "weight", amount=20)
        assert not p.is_pruned(m) and isinstance(m.weight, lib.nn.Parameter)  # a failed apply leaves it as it was
        with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
            p.ln_structured(m, "bias", amount=1, n=2, dim=0)
        with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
            p.global_unstructured([(m, "weight")], pruning_method=p.LnStructured, amount=1, n=2, dim=0)
