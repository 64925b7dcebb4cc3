"""ZeroRedundancyOptimizer (ZeRO-1) on real ranks against DDP with a plain AdamW and one process.

Each rank rebuilds the whole global batch from the step's seed and computes the
single-process reference itself. Shapes give uneven and empty dim-0 shards on 3 ranks and
parameters too small to shard. Two parameter groups (the biases without weight decay),
gradient clipping and a StepLR schedule run unchanged on the sharded optimizer.
"""

import pytest

from shardflow.testing.mpi import run_mpi

SCRIPT = r"""
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F, shardflow.optim as optim
import shardflow.distributed as dist
from shardflow.distributed.zero import ZeroRedundancyOptimizer
from shardflow.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
ROWS = 2

def make():
    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Tanh(), nn.Linear(4, 2))

def groups(m):
    return [{"params": [p for n, p in m.named_parameters() if n.endswith("weight")]},
            {"params": [p for n, p in m.named_parameters() if n.endswith("bias")], "weight_decay": 0.0}]

def batch(step):
    g = np.random.default_rng(step)
    return (g.standard_normal((ROWS * W, 5)).astype(np.float32),
            g.standard_normal((ROWS * W, 2)).astype(np.float32))

def run(model, opt, sched, steps, local=True, start=0):
    for step in range(start, start + steps):
        X, Y = batch(step)
        if local:
            X, Y = X[r * ROWS:(r + 1) * ROWS], Y[r * ROWS:(r + 1) * ROWS]
        F.mse_loss(model(sf.tensor(X)), sf.tensor(Y)).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step(); opt.zero_grad(); sched.step()

def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))

ref = make(); ro = optim.AdamW(groups(ref), lr=0.02); rs = optim.lr_scheduler.StepLR(ro, 4, 0.5)
run(ref, ro, rs, 10, local=False)
dm = make(); do = optim.AdamW(groups(dm), lr=0.02); ds = optim.lr_scheduler.StepLR(do, 4, 0.5)
run(DDP(dm), do, ds, 10)
zm = make(); ddp = DDP(zm)
zo = ZeroRedundancyOptimizer(groups(zm), optim.AdamW, lr=0.02)
zs = optim.lr_scheduler.StepLR(zo, 4, 0.5)
run(ddp, zo, zs, 10)
for (name, p), q, d in zip(zm.named_parameters(), ref.parameters(), dm.parameters()):
    assert rel(p.array, q.array) < 1e-6, (name, rel(p.array, q.array))
    assert rel(p.array, d.array) < 1e-6, (name, "ddp", rel(p.array, d.array))
# this rank holds moments for its rows only
inner = {tuple(v.array.shape) for st in zo.optim.state.values() for v in st.values() if v.array.ndim}
print("SHAPES", r, sorted(inner), flush=True)
# sharded state: global tensors S(0) (or B for the small parameters)
ssd = zo.sharded_state_dict()
ea = ssd["state"][0]["exp_avg"]
assert ea.is_global and str(ea.sbp) == "(S(0),)" and tuple(ea.shape) == (7, 5)
np.testing.assert_allclose(ea.numpy(), ro.state_dict()["state"][0]["exp_avg"].array, rtol=1e-4, atol=1e-7)
# PyTorch's protocol: state_dict needs consolidate_state_dict first
try:
    zo.state_dict()
    raise SystemExit("state_dict before consolidate did not raise")
except RuntimeError as e:
    assert "consolidate_state_dict" in str(e)
zo.consolidate_state_dict(to=0)
whole = [zo.state_dict() if r == 0 else None]
dist.broadcast_object_list(whole, src=0)
whole = whole[0]
want = ro.state_dict()
for i, st in want["state"].items():
    for k, v in st.items():
        np.testing.assert_allclose(whole["state"][i][k].array, v.array, rtol=1e-4, atol=1e-7)
assert [g["lr"] for g in whole["param_groups"]] == [g["lr"] for g in want["param_groups"]]
# the whole state loads into a fresh ZeRO optimizer (and into a plain AdamW): 3 more steps agree
zm2 = make(); zm2.load_state_dict(zm.state_dict())
zo2 = ZeroRedundancyOptimizer(groups(zm2), optim.AdamW, lr=0.02)
zo2.load_state_dict(whole)
zs2 = optim.lr_scheduler.StepLR(zo2, 4, 0.5, last_epoch=-1)
zs2.last_epoch = zs.last_epoch
run(DDP(zm2), zo2, zs2, 3, start=10)
run(ddp, zo, zs, 3, start=10)
for p, q in zip(zm2.parameters(), zm.parameters()):
    assert rel(p.array, q.array) < 1e-6, rel(p.array, q.array)
# a param group change after sharding is refused, naming the fix
zo.param_groups[1]["params"].append(nn.Parameter(sf.zeros(3)))
try:
    zo.step()
    raise SystemExit("changed groups did not raise")
except RuntimeError as e:
    assert "param_groups changed" in str(e)
try:
    zo.add_param_group({"params": [nn.Parameter(sf.zeros(3))]})
    raise SystemExit("add_param_group did not raise")
except RuntimeError as e:
    assert "not supported" in str(e)
print("ALL OK", r, flush=True)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("n", [2, 3])
def test_zero1_equals_ddp_and_one_process(n):
    res = run_mpi(SCRIPT, n=n, timeout=120).check()
    assert res.stdout.count("ALL OK") == n
    if n == 3:  # rows of the (7, 5) weight: 3, 3, 1; of the (4, 7) weight: 2, 2, 0
        assert "SHAPES 2 [(0,), (0, 7), (1,), (1, 5), (2,), (2, 4)]" in res.stdout


def test_one_process_and_constructor_errors():
    import numpy as np

    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.optim as optim
    from shardflow.distributed.zero import ZeroRedundancyOptimizer

    sf.manual_seed(0)
    a = nn.Linear(4, 3)
    b = nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    za = ZeroRedundancyOptimizer(a.parameters(), optim.SGD, lr=0.1, momentum=0.9)
    sb = optim.SGD(b.parameters(), lr=0.1, momentum=0.9)
    x = sf.randn(2, 4)
    for m, o in ((a, za), (b, sb)):
        for _ in range(3):
            m(x).sum().backward()
            o.step()
            o.zero_grad()
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.array, q.array)
    with pytest.raises(TypeError, match="optimizer_class"):
        ZeroRedundancyOptimizer(a.parameters(), "adam")
    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer(a.parameters(), optim.SGD, overlap_with_ddp=True, lr=0.1)


def test_load_refuses_state_of_another_shape_before_changing_anything():
    """ZeroRedundancyOptimizer.load_state_dict / load_sharded_state_dict check every state
    tensor against its parameter first (issue 27): a wrong shape raises a ValueError naming
    the state, and neither the state nor the hyper-parameters change."""
    import copy

    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.optim as optim
    from shardflow.distributed.zero import ZeroRedundancyOptimizer

    sf.manual_seed(0)
    m = nn.Linear(4, 3)
    z = ZeroRedundancyOptimizer(m.parameters(), optim.AdamW, lr=0.1)
    m(sf.randn(2, 4)).sum().backward()
    z.step()
    z.consolidate_state_dict(0)
    good = z.state_dict()
    inner_before = {p: dict(st) for p, st in z.optim.state.items()}
    for load, sd in ((z.load_state_dict, good), (z.load_sharded_state_dict, z.sharded_state_dict())):
        bad = copy.deepcopy(sd)
        bad["state"][0]["exp_avg"] = sf.zeros(2, 4)  # the weight is (3, 4)
        bad["param_groups"][0]["lr"] = 0.5
        with pytest.raises(ValueError, match=r"state 'exp_avg' of parameter 0 has shape \(2, 4\)"):
            load(bad)
        assert z.param_groups[0]["lr"] == 0.1 and z.optim.param_groups[0]["lr"] == 0.1
        assert all(z.optim.state[p][k] is v for p, st in inner_before.items() for k, v in st.items())
    z.load_state_dict(good)  # the right state still loads


# -- `shardflow train --zero 1|2|3` -------------------------------------------------------
FLAGS = ["--max-steps", "4", "--n-layer", "2", "--n-embd", "32", "--n-head", "2", "--block-size",
         "16", "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "2", "--log-interval",
         "1", "--ckpt-interval", "2", "--keep-checkpoints", "10", "--sample-tokens", "5",
         "--no-progress", "--num-workers", "0", "--max-corpus-bytes", "20000"]


def _losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return [float(r[1]) for r in rows if r[1]], [float(r[2]) for r in rows if r[2]]


def _train(n, *args):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", str(n), "shardflow", "train",
           "gpt", *args, *FLAGS]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


@pytest.mark.mpi
def test_train_cli_zero_stages_equal_one_process_and_resume_across_layouts(tmp_path, capsys):
    import numpy as np

    import shardflow as sf
    from shardflow.cli.train import ConfigError, main, resolve_config

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    one = tmp_path / "one"
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    capsys.readouterr()
    t1, v1 = _losses(one / "metrics.csv")
    s1 = sf.load(one / "ckpt_0000004.safetensors")
    for z in (1, 2, 3):
        out = tmp_path / f"z{z}"
        r = _train(2, "--zero", str(z), "--data", str(corpus), "--out", str(out))
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"ZeRO stage {z}" in r.stdout and "--- sample" in r.stdout
        tz, vz = _losses(out / "metrics.csv")
        np.testing.assert_allclose(tz, t1, rtol=0, atol=2e-5)
        np.testing.assert_allclose(vz, v1, rtol=0, atol=2e-5)
        sz = sf.load(out / "ckpt_0000004.safetensors")
        for k in s1["model"]:  # whole tensors, equal to one process's
            np.testing.assert_allclose(sz["model"][k].numpy(), s1["model"][k].numpy(), atol=2e-5,
                                       err_msg=k)
    # a ZeRO-3 checkpoint (2 ranks) resumes on one rank without ZeRO, and a one-rank
    # checkpoint resumes with ZeRO-1 on 2 ranks: the same trajectory
    for src, n, extra in (("z3", 1, []), ("one", 2, ["--zero", "1"])):
        dst = tmp_path / f"resume_{src}"
        dst.mkdir()
        (dst / "ckpt_0000002.safetensors").write_bytes((tmp_path / src / "ckpt_0000002.safetensors").read_bytes())
        if n == 1:
            assert main(["gpt", "--data", str(corpus), "--out", str(dst), "--resume", *FLAGS]) == 0
            capsys.readouterr()
        else:
            r = _train(n, *extra, "--resume", "--data", str(corpus), "--out", str(dst))
            assert r.returncode == 0, r.stdout + r.stderr
        s3 = sf.load(dst / "ckpt_0000004.safetensors")
        for k in s1["model"]:
            np.testing.assert_allclose(s3["model"][k].numpy(), s1["model"][k].numpy(), atol=5e-5,
                                       err_msg=k)
    (tmp_path / "cfg.yaml").write_text("zero: 3\n")  # the YAML key
    assert resolve_config(["gpt", "--config", str(tmp_path / "cfg.yaml")]).zero == 3
    with pytest.raises(ConfigError, match="--zero"):
        resolve_config(["gpt", "--zero", "4"])
    with pytest.raises(ConfigError, match="--tp/--dp"):
        resolve_config(["gpt", "--zero", "2", "--tp", "2"])
