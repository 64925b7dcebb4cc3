"""FSDP1 (``FullyShardedDataParallel``, PyTorch's wrapper API over ``fully_shard``) on 2 real
ranks against the single-process computation.

One launch (``run_program`` of this module's ``main``) checks, per sharding strategy
(FULL_SHARD with transformer auto-wrap and MixedPrecision(float32), SHARD_GRAD_OP, NO_SHARD,
_HYBRID_SHARD_ZERO2 on a (1, 2) device mesh):
the losses and clipped-gradient norms of a few AdamW steps (each rank feeds its half of the
batch) equal the single-process run's on the whole batch, and the final FULL_STATE_DICT
(rank0_only, offload_to_cpu) has the unwrapped model's keys and values on rank 0, ``{}``
on rank 1; then ``no_sync`` accumulation equals one big batch, ``sync_module_states`` gives
a model built on rank 0 only (meta elsewhere) rank 0's weights, a SHARDED_STATE_DICT goes
through ``dcp.save``/``dcp.load`` into a fresh model, the optimizer state round-trips by
name, and ``summon_full_params`` writes back.
"""

import copy
import functools

import numpy as np


def _classes():
    import shardflow as torch
    import shardflow.nn as nn

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc = nn.Linear(d, d)

        def forward(self, x):
            return x + torch.tanh(self.fc(self.ln(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(4, 8)
            self.blocks = nn.ModuleList([Block(8) for _ in range(2)])
            self.out = nn.Linear(8, 3)

        def forward(self, x):
            h = self.inp(x)
            for b in self.blocks:
                h = b(h)
            return self.out(h)

    return Block, Net


def _batch(seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((8, 4)).astype(np.float32)  # (B=8, 4): rank r takes rows 4r..4r+4


def _train(model, x, steps=3, max_norm=0.05):
    """AdamW steps of mean(model(x)^2) with clip_grad_norm_; (losses, norms)."""
    import shardflow as torch
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP

    opt = torch.optim.AdamW(model.parameters(), lr=0.02)
    losses, norms = [], []
    for _ in range(steps):
        loss = model(x).pow(2).mean()
        loss.backward()
        clip = model.clip_grad_norm_ if isinstance(model, FSDP) else functools.partial(
            torch.nn.utils.clip_grad_norm_, model.parameters())
        norms.append(float(clip(max_norm)))
        opt.step()
        opt.zero_grad()
        losses.append(float(loss))
    return losses, norms, opt


def _full_sd(model):
    from shardflow.distributed.fsdp import FullStateDictConfig, StateDictType
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP

    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        return model.state_dict()


def _assert_sd_equal(got, want, rtol=1e-5, atol=1e-6):
    assert list(got) == list(want), (list(got), list(want))
    for k in want:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=rtol, atol=atol, err_msg=k)


def main(argv):
    import shardflow as torch
    import shardflow.distributed as dist
    import shardflow.distributed.checkpoint as dcp
    from shardflow.distributed.fsdp import (
        FullyShardedDataParallel as FSDP,
    )
    from shardflow.distributed.fsdp import (
        MixedPrecision,
        ShardingStrategy,
        StateDictType,
    )
    from shardflow.distributed.fsdp.wrap import ModuleWrapPolicy, transformer_auto_wrap_policy
    from shardflow.distributed.placement import init_device_mesh

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2
    Block, Net = _classes()
    xs = _batch()
    x_all, x_mine = torch.tensor(xs), torch.tensor(xs[4 * rank: 4 * rank + 4])
    torch.manual_seed(0)
    init = Net()
    ref = copy.deepcopy(init)
    ref_losses, ref_norms, ref_opt = _train(ref, x_all)
    ref_sd = ref.state_dict()
    assert ref_norms[0] > 0.05  # the clip acts

    block_policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    cases = {
        "FULL_SHARD": dict(auto_wrap_policy=block_policy, mixed_precision=MixedPrecision(
            param_dtype=torch.float32, reduce_dtype=torch.float32, buffer_dtype=torch.float32)),
        "SHARD_GRAD_OP": dict(sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
                              auto_wrap_policy=ModuleWrapPolicy({Block})),
        "NO_SHARD": dict(sharding_strategy=ShardingStrategy.NO_SHARD),
        "_HYBRID_SHARD_ZERO2": dict(sharding_strategy=ShardingStrategy._HYBRID_SHARD_ZERO2,
                                    device_mesh=init_device_mesh("cpu", (1, 2))),
    }
    for name, kwargs in cases.items():
        model = FSDP(copy.deepcopy(init), **kwargs)
        assert len(FSDP.fsdp_modules(model)) == (3 if "auto_wrap_policy" in kwargs else 1), name
        losses, norms, opt = _train(model, x_mine)
        mean_losses = np.mean(_gather(dist, losses), axis=0)  # the loss of the whole batch
        np.testing.assert_allclose(mean_losses, ref_losses, rtol=1e-5, err_msg=name)
        np.testing.assert_allclose(norms, ref_norms, rtol=1e-5, err_msg=name)
        sd = _full_sd(model)
        if rank == 0:
            _assert_sd_equal(sd, ref_sd)
        else:
            assert sd == {}, (name, list(sd))
        # the optimizer state by name equals the single-process AdamW's
        osd = FSDP.optim_state_dict(model, opt)
        names = [n for n, _ in ref.named_parameters()]
        assert list(osd["state"]) == names and osd["param_groups"][0]["params"] == names
        ref_state = ref_opt.state_dict()["state"]
        for i, n in enumerate(names):
            np.testing.assert_allclose(osd["state"][n]["exp_avg"].numpy(), ref_state[i]["exp_avg"].numpy(),
                                       rtol=1e-5, atol=1e-8, err_msg=n)
        # ... and loads back: the next step matches a fresh optimizer given it
        opt2 = torch.optim.AdamW(model.parameters(), lr=0.02)
        opt2.load_state_dict(FSDP.optim_state_dict_to_load(model, opt2, osd))
        assert float(opt2.state_dict()["state"][0]["step"]) == 3.0

    # -- no_sync: two micro-batches accumulated without communication == one big batch
    ref = copy.deepcopy(init)
    (ref(x_all).pow(2).mean()).backward()
    sgd = torch.optim.SGD(ref.parameters(), lr=0.5)
    sgd.step()
    model = FSDP(copy.deepcopy(init), auto_wrap_policy=block_policy)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with model.no_sync():
        (model(x_mine[:2]).pow(2).mean() / 2).backward()
    reduced = model.module.fsdp_stats()["reduce_scatter"]
    assert reduced == 0, reduced  # no communication inside no_sync (the sums would agree anyway)
    (model(x_mine[2:]).pow(2).mean() / 2).backward()
    assert model.module.fsdp_stats()["reduce_scatter"] > 0
    opt.step()
    sd = _full_sd(model)
    if rank == 0:
        _assert_sd_equal(sd, ref.state_dict())

    # -- summon_full_params: whole parameters inside, written back on exit
    with FSDP.summon_full_params(model):
        w = model.module.inp.weight
        assert tuple(w.shape) == (8, 4) and w._spec is None
        assert "inp.weight" in dict(model.named_parameters())
        with torch.no_grad():
            w.mul_(0.0).add_(float(rank + 1))  # each rank writes back its own rows
    sd = _full_sd(model)
    if rank == 0:
        np.testing.assert_array_equal(sd["inp.weight"].numpy(), np.repeat([[1.0], [2.0]], 4, axis=0) * np.ones((8, 4)))

    # -- sync_module_states: built on rank 0 only (meta elsewhere), rank 0's weights everywhere
    if rank == 0:
        m0 = copy.deepcopy(init)
    else:
        with torch.device("meta"):
            m0 = Net()
    model = FSDP(m0, auto_wrap_policy=block_policy, sync_module_states=True,
                 param_init_fn=lambda m: m.to_empty(device=torch.device("cpu"), recurse=False))
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        sd = model.state_dict()  # whole on both ranks (rank0_only=False)
    _assert_sd_equal(sd, init.state_dict(), rtol=0, atol=0)

    # -- SHARDED_STATE_DICT: global values through dcp.save / dcp.load into a fresh model
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        ssd = model.state_dict()
        assert list(ssd) == list(init.state_dict())
        assert ssd["inp.weight"]._spec is not None and tuple(ssd["inp.weight"].to_local().shape) == (4, 4)
        dcp.save({"model": ssd}, checkpoint_id=argv[0])
    torch.manual_seed(123)
    fresh = FSDP(Net(), auto_wrap_policy=block_policy)
    with FSDP.state_dict_type(fresh, StateDictType.SHARDED_STATE_DICT):
        target = {"model": fresh.state_dict()}
        dcp.load(target, checkpoint_id=argv[0])
        fresh.load_state_dict(target["model"])
    sd = _full_sd(fresh)  # a collective: every rank calls it, rank 0 gets the values
    if rank == 0:
        _assert_sd_equal(sd, init.state_dict(), rtol=0, atol=0)
    dist.destroy_process_group()


def _gather(dist, obj):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def test_fsdp1_strategies_state_dicts_no_sync_and_sync_module_states_on_2_ranks(tmp_path):
    from shardflow.testing.mpi import run_program

    run_program("tests.distributed.test_fsdp1", n=2, args=[str(tmp_path / "ckpt")], timeout=180).check()
