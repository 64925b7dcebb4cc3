"""Optimizer hooks against torch 2.13: step pre/post (per optimizer and global), state_dict
and load_state_dict pre/post, their order, return values and handles."""
import numpy as np
import pytest
import torch
import torch.optim.optimizer as torch_optimizer

import shardflow as sf
from shardflow.optim import optimizer as sf_optimizer


def _pair(opt_name="SGD", **kw):
    """The same one-parameter problem in shardflow and torch."""
    init = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    p_sf = sf.nn.Parameter(sf.tensor(init.copy()))
    p_t = torch.nn.Parameter(torch.tensor(init.copy()))
    return (getattr(sf.optim, opt_name)([p_sf], lr=0.1, **kw), p_sf,
            getattr(torch.optim, opt_name)([p_t], lr=0.1, **kw), p_t)


def _grad(p, lib):
    p.grad = lib.tensor(np.array([0.5, 0.25, -1.0], dtype=np.float32))


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_step_hooks_order_args_and_values_match_torch(opt_name):
    o_sf, p_sf, o_t, p_t = _pair(opt_name)
    logs = {"sf": [], "torch": []}
    handles = []
    for tag, opt, mod in (("sf", o_sf, sf_optimizer), ("torch", o_t, torch_optimizer)):
        log = logs[tag]
        handles += [
            mod.register_optimizer_step_pre_hook(lambda o, a, k, log=log: log.append(("gpre", len(a), a[0] is o))),
            opt.register_step_pre_hook(lambda o, a, k, log=log: log.append(("pre", len(a), dict(k)))),
            opt.register_step_post_hook(lambda o, a, k, log=log: log.append(("post", len(a)))),
            mod.register_optimizer_step_post_hook(lambda o, a, k, log=log: log.append(("gpost",))),
        ]
    try:
        for _ in range(3):
            _grad(p_sf, sf)
            _grad(p_t, torch)
            o_sf.step()
            o_t.step()
    finally:
        for h in handles:
            h.remove()
    assert logs["sf"] == logs["torch"]
    assert logs["sf"][:4] == [("gpre", 1, True), ("pre", 1, {}), ("post", 1), ("gpost",)]
    np.testing.assert_allclose(p_sf.detach().numpy(), p_t.detach().numpy(), rtol=1e-6)
    n = len(logs["sf"])
    o_sf.step()
    assert len(logs["sf"]) == n  # removed handles stop calling


def test_step_pre_hook_may_replace_arguments():
    o_sf, p_sf, o_t, p_t = _pair()
    calls = {"sf": 0, "torch": 0}

    def closure_for(tag, p, lib):
        def closure():
            calls[tag] += 1
            _grad(p, lib)
            return 0.0
        return closure

    o_sf.register_step_pre_hook(lambda o, a, k: ((a[0],), {"closure": closure_for("sf", p_sf, sf)}))
    o_t.register_step_pre_hook(lambda o, a, k: ((a[0],), {"closure": closure_for("torch", p_t, torch)}))
    o_sf.step()
    o_t.step()
    assert calls == {"sf": 1, "torch": 1}
    np.testing.assert_allclose(p_sf.detach().numpy(), p_t.detach().numpy(), rtol=1e-6)


def test_bad_pre_hook_result_is_an_error_as_torch():
    o_sf, p_sf, o_t, p_t = _pair()
    o_sf.register_step_pre_hook(lambda o, a, k: 5)
    o_t.register_step_pre_hook(lambda o, a, k: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        o_t.step()
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        o_sf.step()


def test_subclass_calling_super_step_runs_hooks_once():
    class Mine(sf.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    p = sf.nn.Parameter(sf.ones(2))
    opt = Mine([p], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: seen.append("post"))
    p.grad = sf.ones(2)
    opt.step()
    assert seen == ["pre", "post"]
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 0.9], rtol=1e-6)


def test_state_dict_hooks_match_torch():
    logs = {"sf": [], "torch": []}
    results = {}
    for tag, lib in (("sf", sf), ("torch", torch)):
        o_sf, p_sf, o_t, p_t = _pair("Adam")
        opt, p = (o_sf, p_sf) if tag == "sf" else (o_t, p_t)
        _grad(p, lib)
        opt.step()
        log = logs[tag]
        opt.register_state_dict_pre_hook(lambda o, log=log: log.append("pre"))
        opt.register_state_dict_pre_hook(lambda o, log=log: log.append("pre-first"), prepend=True)

        def post(o, sd, log=log):
            log.append(("post", sorted(sd)))
            sd["extra"] = 1
            return sd

        h = opt.register_state_dict_post_hook(post)
        results[tag] = opt.state_dict()
        h.remove()
        assert "extra" not in opt.state_dict()
    assert logs["sf"] == logs["torch"] == ["pre-first", "pre", ("post", ["param_groups", "state"]),
                                          "pre-first", "pre"]
    assert results["sf"]["extra"] == results["torch"]["extra"] == 1


def test_load_state_dict_hooks_match_torch():
    logs = {"sf": [], "torch": []}
    lrs = {}
    for tag, lib in (("sf", sf), ("torch", torch)):
        o_sf, p_sf, o_t, p_t = _pair("SGD", momentum=0.9)
        opt, p = (o_sf, p_sf) if tag == "sf" else (o_t, p_t)
        _grad(p, lib)
        opt.step()
        saved = opt.state_dict()
        log = logs[tag]

        def pre(o, sd, log=log):
            log.append(("pre", sorted(sd)))
            sd = dict(sd)
            sd["param_groups"] = [dict(g, lr=0.5) for g in sd["param_groups"]]
            return sd

        opt.register_load_state_dict_pre_hook(pre)
        opt.register_load_state_dict_post_hook(lambda o, log=log: log.append(("post", o.param_groups[0]["lr"])))
        opt.load_state_dict(saved)
        lrs[tag] = opt.param_groups[0]["lr"]
        assert saved["param_groups"][0]["lr"] == 0.1  # the caller's dict is not edited
    assert logs["sf"] == logs["torch"] == [("pre", ["param_groups", "state"]), ("post", 0.5)]
    assert lrs["sf"] == lrs["torch"] == 0.5


def test_hook_registration_signatures_match_torch():
    assert sf.optim.optimizer.register_optimizer_step_pre_hook is sf_optimizer.register_optimizer_step_pre_hook
    import inspect
    for name in ["register_step_pre_hook", "register_step_post_hook", "register_state_dict_pre_hook",
                 "register_state_dict_post_hook", "register_load_state_dict_pre_hook",
                 "register_load_state_dict_post_hook"]:
        ours = list(inspect.signature(getattr(sf.optim.Optimizer, name)).parameters)
        ref = list(inspect.signature(getattr(torch.optim.Optimizer, name)).parameters)
        assert ours == ref, name
