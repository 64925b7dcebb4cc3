"""FSDP1's API in one process (a world of one): PyTorch's types, fields, defaults and
constructor signature; the auto-wrap policies pick the modules PyTorch's pick (its own
``_recursive_wrap`` / ``_run_policy`` on the same model in torch); ``enable_wrap``/``wrap``;
state-dict keys, types and round trips; and errors raised before anything changes. The
2-rank behaviour is in test_fsdp1.py."""

import dataclasses
import functools
import inspect

import numpy as np
import pytest


def _models():
    """The same small model in torch and in shardflow."""
    import torch
    import torch.nn as tnn

    import shardflow.nn as snn

    def build(nn):
        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.ln = nn.LayerNorm(d)
                self.fc1 = nn.Linear(d, 2 * d)
                self.fc2 = nn.Linear(2 * d, d)

            def forward(self, x):
                return x + self.fc2(self.fc1(self.ln(x)).tanh())

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Linear(4, 8)
                self.layers = nn.ModuleList([Block(8) for _ in range(3)])
                self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

            def forward(self, x):
                h = self.embed(x)
                for b in self.layers:
                    h = b(h)
                return self.head(h)

        return Block, Net

    del torch
    return build(tnn), build(snn)


def _torch_wrapped_paths(model, policy):
    """Paths PyTorch's auto-wrap would make units of (its own walk, a stand-in wrapper)."""
    import torch.nn as tnn
    from torch.distributed.fsdp import wrap as twrap

    class Unit(tnn.Module):
        def __init__(self, module, **kwargs):
            super().__init__()
            self.inner = module

    if isinstance(policy, twrap._Policy):
        targets = policy._run_policy(model, set(), {})
        return sorted(n for n, m in model.named_modules() if m in targets and n)
    twrap._recursive_wrap(model, policy, Unit, set(), set(), only_wrap_children=True)
    return sorted(n.replace("inner.", "") for n, m in model.named_modules() if isinstance(m, Unit))


def _our_wrapped_paths(model):
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP

    return sorted(n.replace("_fsdp_wrapped_module.", "") for n, m in model.named_modules()
                  if isinstance(m, FSDP) and n)


def test_types_fields_defaults_and_signature_are_pytorchs():
    tf = pytest.importorskip("torch.distributed.fsdp")
    import shardflow.distributed.fsdp as sf

    for name in ("ShardingStrategy", "BackwardPrefetch", "StateDictType", "OptimStateKeyType"):
        assert [m.name for m in getattr(sf, name)] == [m.name for m in getattr(tf, name)], name
    for name in ("MixedPrecision", "CPUOffload", "StateDictConfig", "FullStateDictConfig",
                 "LocalStateDictConfig", "ShardedStateDictConfig", "OptimStateDictConfig",
                 "FullOptimStateDictConfig", "LocalOptimStateDictConfig", "ShardedOptimStateDictConfig",
                 "StateDictSettings"):
        ours = {f.name: f.default for f in dataclasses.fields(getattr(sf, name))}
        theirs = {f.name: f.default for f in dataclasses.fields(getattr(tf, name))}
        assert list(ours) == list(theirs), name
        for k in ours:
            if k == "_module_classes_to_ignore":  # (BatchNorm's base,) in each library
                assert [c.__name__ for c in ours[k]] == [c.__name__ for c in theirs[k]]
            else:
                assert ours[k] == theirs[k], (name, k)
    ours = inspect.signature(sf.FullyShardedDataParallel.__init__).parameters
    theirs = inspect.signature(tf.FullyShardedDataParallel.__init__).parameters
    assert list(ours) == list(theirs)
    for k in ours:
        a, b = ours[k].default, theirs[k].default
        assert (a.name == b.name) if hasattr(b, "name") else a == b, k
    import torch.distributed.fsdp.wrap as tw

    import shardflow.distributed.fsdp.wrap as sw

    for name in ("size_based_auto_wrap_policy", "transformer_auto_wrap_policy", "lambda_auto_wrap_policy"):
        assert list(inspect.signature(getattr(sw, name)).parameters) == \
            list(inspect.signature(getattr(tw, name)).parameters), name


def test_auto_wrap_policies_pick_the_modules_pytorchs_pick():
    import torch.distributed.fsdp.wrap as tw

    import shardflow.distributed.fsdp.wrap as sw
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP

    (TBlock, TNet), (SBlock, SNet) = _models()
    cases = [
        ("size 100", lambda w, B: functools.partial(w.size_based_auto_wrap_policy, min_num_params=100)),
        ("size 250", lambda w, B: functools.partial(w.size_based_auto_wrap_policy, min_num_params=250)),
        ("transformer", lambda w, B: functools.partial(w.transformer_auto_wrap_policy, transformer_layer_cls={B})),
        ("lambda", lambda w, B: functools.partial(w.lambda_auto_wrap_policy,
                                                  lambda_fn=lambda m: type(m).__name__ == "Linear")),
        ("ModuleWrapPolicy", lambda w, B: w.ModuleWrapPolicy({B})),
        ("CustomPolicy", lambda w, B: w.CustomPolicy(lambda m: type(m).__name__ in ("Sequential", "LayerNorm"))),
    ]
    for label, make in cases:
        want = _torch_wrapped_paths(TNet(), make(tw, TBlock))
        got = _our_wrapped_paths(FSDP(SNet(), auto_wrap_policy=make(sw, SBlock)))
        assert got == want, (label, got, want)
        assert want, label  # each case wraps something


def test_enable_wrap_and_wrap():
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp import ShardingStrategy
    from shardflow.distributed.fsdp.wrap import enable_wrap, wrap

    lin = nn.Linear(3, 3)
    assert wrap(lin) is lin  # outside the context: unchanged
    with enable_wrap(wrapper_cls=FSDP, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP):
        inner = wrap(nn.Linear(3, 3))
        other = wrap(nn.Linear(3, 3), sharding_strategy=ShardingStrategy.NO_SHARD)
        with pytest.raises(NotImplementedError, match="nested autowrap"):
            with enable_wrap(wrapper_cls=FSDP):
                pass
        model = wrap(nn.Sequential(inner, other))
    assert isinstance(inner, FSDP) and inner.sharding_strategy == ShardingStrategy.SHARD_GRAD_OP
    assert other.sharding_strategy == ShardingStrategy.NO_SHARD
    assert model.check_is_root() and not inner.check_is_root()
    assert FSDP.fsdp_modules(model) == [model, inner, other]
    assert FSDP.fsdp_modules(model, root_only=True) == [model]
    assert wrap(lin) is lin  # the context is over


def test_world_of_one_trains_like_the_plain_model_for_every_strategy():
    import copy

    import shardflow as sf
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp import ShardingStrategy

    _, (SBlock, SNet) = _models()
    sf.manual_seed(0)
    init = SNet()
    x = sf.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4))

    def losses(model):
        opt = sf.optim.AdamW(model.parameters(), lr=0.05)
        out = []
        for _ in range(2):
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            out.append(float(loss))
        return out

    want = losses(copy.deepcopy(init))
    for s in ShardingStrategy:
        m = FSDP(copy.deepcopy(init), sharding_strategy=s)
        assert [id(p) for p in m.parameters()] == [id(p) for p in m.module.parameters()]
        np.testing.assert_allclose(losses(m), want, rtol=1e-6, err_msg=s.name)


def test_state_dict_keys_types_and_round_trips():
    import copy

    import shardflow as sf
    from shardflow.distributed.fsdp import (
        FullOptimStateDictConfig,
        FullStateDictConfig,
        OptimStateKeyType,
        ShardedStateDictConfig,
        StateDictType,
    )
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp.wrap import ModuleWrapPolicy

    _, (SBlock, SNet) = _models()
    sf.manual_seed(0)
    plain = SNet()
    model = FSDP(copy.deepcopy(plain), auto_wrap_policy=ModuleWrapPolicy({SBlock}))
    keys = list(plain.state_dict())
    assert list(model.state_dict()) == keys
    assert any("_fsdp_wrapped_module" in n for n, _ in model.named_parameters())  # torch's names
    prev = FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)
    assert prev.state_dict_type == StateDictType.FULL_STATE_DICT
    assert prev.state_dict_config == FullStateDictConfig()
    assert prev.optim_state_dict_config == FullOptimStateDictConfig()
    sd = model.state_dict()
    assert list(sd) == keys and all(v._spec is not None for v in sd.values())
    assert FSDP.get_state_dict_type(model.module.layers[1]).state_dict_config == ShardedStateDictConfig()
    FSDP.set_state_dict_type(model, StateDictType.FULL_STATE_DICT)
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        assert FSDP.get_state_dict_type(model).state_dict_type == StateDictType.SHARDED_STATE_DICT
    assert FSDP.get_state_dict_type(model).state_dict_type == StateDictType.FULL_STATE_DICT
    # loads PyTorch's keys, and its prefixed ones
    other = SNet()
    model.load_state_dict(other.state_dict())
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[k].numpy(), v.numpy())
    prefixed = {n: p.detach() for n, p in FSDP(copy.deepcopy(plain)).named_parameters()}
    FSDP(SNet()).load_state_dict(prefixed)
    # optimizer state by name, re-keyed by id for the plain model and back
    opt = sf.optim.Adam(model.parameters(), lr=0.1)
    model(sf.ones(2, 4)).sum().backward()
    opt.step()
    osd = FSDP.optim_state_dict(model, opt)
    assert list(osd["state"]) == [n for n, _ in plain.named_parameters()]
    by_id = FSDP.rekey_optim_state_dict(osd, OptimStateKeyType.PARAM_ID, plain)
    assert list(by_id["state"]) == list(range(len(keys)))
    plain_opt = sf.optim.Adam(plain.parameters(), lr=0.1)
    plain_opt.load_state_dict(by_id)
    back = FSDP.rekey_optim_state_dict(by_id, OptimStateKeyType.PARAM_NAME, model)
    assert list(back["state"]) == list(osd["state"])
    assert FSDP.full_optim_state_dict(model, opt)["param_groups"] == osd["param_groups"]


def test_mixed_precision_meta_init_and_summon():
    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp import MixedPrecision
    from shardflow.distributed.fsdp.wrap import size_based_auto_wrap_policy

    m = FSDP(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)),
             mixed_precision=MixedPrecision(param_dtype=sf.float64, buffer_dtype=sf.float64))
    assert m.module[1].running_mean.dtype == sf.float64  # buffer_dtype
    out = m(sf.ones(2, 3))  # the root casts its inputs to param_dtype, computes in it
    assert out.dtype == sf.float64
    out.sum().backward()
    w = m.module[0].weight
    assert w.dtype == sf.float32 and w.grad.dtype == sf.float32  # the shards stay float32
    # under auto-wrap a BatchNorm is its own unit without mixed precision (PyTorch's
    # _module_classes_to_ignore): float32 buffers, computed in float32, output cast back
    m = FSDP(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)),
             auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=10 ** 6),
             mixed_precision=MixedPrecision(param_dtype=sf.float64, buffer_dtype=sf.float64))
    assert isinstance(m.module[1], FSDP) and m.module[1].mixed_precision is None
    assert m.module[1].module.running_mean.dtype == sf.float32
    assert m(sf.ones(2, 3)).dtype == sf.float64
    with sf.device("meta"):
        meta = nn.Linear(3, 4)
    model = FSDP(meta)  # to_empty + reset_parameters
    with FSDP.summon_full_params(model, writeback=False):
        w = model.module.weight
        assert tuple(w.shape) == (4, 3) and np.isfinite(w.numpy()).all() and np.abs(w.numpy()).max() > 0
        assert [n for n, _ in model.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in model.named_parameters()] == ["_fsdp_wrapped_module.weight", "_fsdp_wrapped_module.bias"]
    # with_grads: whole gradients inside, the sharded ones back after; writeback=False drops edits
    plain = nn.Linear(3, 4)
    model = FSDP(nn.Linear(3, 4))
    model.load_state_dict(plain.state_dict())
    x = sf.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    plain(x).pow(2).sum().backward()
    model(x).pow(2).sum().backward()
    sharded_grad = model.module.weight.grad
    with FSDP.summon_full_params(model, writeback=False, with_grads=True):
        np.testing.assert_allclose(model.module.weight.grad.numpy(), plain.weight.grad.numpy(), rtol=1e-6)
        with sf.no_grad():
            model.module.weight.zero_()
    assert model.module.weight.grad is sharded_grad
    np.testing.assert_array_equal(model.state_dict()["weight"].numpy(), plain.weight.detach().numpy())


def test_errors_name_the_problem_and_change_nothing():
    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import (
        CPUOffload,
        FullStateDictConfig,
        MixedPrecision,
        MixedPrecisionPolicy,
        ShardedStateDictConfig,
        ShardingStrategy,
        StateDictType,
    )
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp.wrap import CustomPolicy
    from shardflow.distributed.placement import init_device_mesh

    lin = nn.Linear(2, 2)
    bad = [
        (dict(sharding_strategy="FULL_SHARD"), TypeError, "sharding_strategy must be a ShardingStrategy"),
        (dict(mixed_precision=MixedPrecisionPolicy()), TypeError, "mixed_precision must be a MixedPrecision"),
        (dict(mixed_precision=MixedPrecision(param_dtype=sf.int64)), TypeError, "floating dtype"),
        (dict(cpu_offload=True), TypeError, "cpu_offload must be a CPUOffload"),
        (dict(auto_wrap_policy={nn.Linear}), TypeError, "auto_wrap_policy must be a callable"),
        (dict(auto_wrap_policy=CustomPolicy(lambda m: 3)), ValueError, "should return False/True"),
        (dict(backward_prefetch="pre"), TypeError, "BackwardPrefetch"),
        (dict(ignored_modules=[], ignored_states=[]), ValueError, "Cannot pass both ignored_modules"),
        (dict(process_group=object(), device_mesh=init_device_mesh("cpu", (1,))), ValueError,
         "Cannot pass both process_group and device_mesh"),
        (dict(sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_mesh=init_device_mesh("cpu", (1,))),
         ValueError, "needs a 2-D device_mesh"),
        (dict(process_group=(None, None), sharding_strategy=ShardingStrategy.HYBRID_SHARD),
         NotImplementedError, "device_mesh="),
    ]
    for kwargs, exc, match in bad:
        with pytest.raises(exc, match=match):
            FSDP(lin, **kwargs)
        assert type(lin) is nn.Linear and "_fsdp_state" not in lin.__dict__, kwargs  # untouched
    with pytest.raises(TypeError, match="expects an nn.Module"):
        FSDP(lambda x: x)
    model = FSDP(nn.Sequential(nn.Linear(2, 2)), auto_wrap_policy=CustomPolicy(lambda m: isinstance(m, nn.Linear)),
                 cpu_offload=CPUOffload(offload_params=True))
    with pytest.raises(ValueError, match="already an FSDP module"):
        FSDP(model)
    with pytest.raises(RuntimeError, match="root FSDP instance"):
        model.module[0].clip_grad_norm_(1.0)
    with pytest.raises(RuntimeError, match="Expected state_dict_config of type"):
        FSDP.set_state_dict_type(model, StateDictType.FULL_STATE_DICT, ShardedStateDictConfig())
    assert FSDP.get_state_dict_type(model).state_dict_config == FullStateDictConfig()  # unchanged
    with pytest.raises(ValueError, match="writeback=True and rank0_only=True"):
        with FSDP.summon_full_params(model, rank0_only=True):
            pass
    with pytest.raises(ValueError, match="holds no FullyShardedDataParallel"):
        FSDP.set_state_dict_type(nn.Linear(2, 2), StateDictType.FULL_STATE_DICT)


def test_ignored_modules_stay_local_in_nested_units():
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp.wrap import ModuleWrapPolicy

    m = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), nn.Linear(2, 2))
    ignored = m[0][1]
    model = FSDP(m, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}), ignored_modules=[ignored])
    assert isinstance(model.module[0], FSDP)  # the inner Sequential is a unit ...
    assert model.module[0].module[0].weight._spec is not None  # ... sharding its first Linear
    assert ignored.weight._spec is None and ignored.bias._spec is None  # not the ignored one


def test_sharded_grad_scaler_is_pytorchs_constructor_over_grad_scaler():
    import torch.distributed.fsdp.sharded_grad_scaler as tsgs

    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    ours = inspect.signature(ShardedGradScaler.__init__).parameters
    theirs = inspect.signature(tsgs.ShardedGradScaler.__init__).parameters
    assert list(ours) == list(theirs)
    assert all(ours[k].default == theirs[k].default for k in ours)
    scaler = ShardedGradScaler("cpu", init_scale=8.0, backoff_factor=0.25, growth_factor=4.0, growth_interval=1)
    model = FSDP(nn.Linear(2, 1))
    opt = sf.optim.SGD(model.parameters(), lr=0.1)
    scaler.scale(model(sf.ones(1, 2)).sum() * float("inf")).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0  # an inf: step skipped, backoff 0.25 (not growth's 4)
    opt.zero_grad()
    scaler.scale(model(sf.ones(1, 2)).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 8.0  # a good step with growth_interval=1: times 4
