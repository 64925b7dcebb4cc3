"""Sharded checkpoints (shardflow.distributed.checkpoint) on real ranks.

Values come from fixed seeds, so every job (and this test process) knows the whole logical
tensors. Jobs: save on 2 ranks (global tensors split on dim 0 and 1, uneven, blocked,
broadcast, partial-sum, plain tensors, values; and a tensor-parallel MLP with its AdamW
state after two steps), load on 3 ranks into other layouts (each rank's shard equal to the
slice of the whole tensor, reading about its share of the bytes) and in this process
(1 rank: plain tensors, the TP model resumed without TP takes the same third step as the
TP run did). A rank killed during a save (before its shard's rename; before the index's
rename) ends the job naming it, the previous checkpoint still loads, and the next save
removes the strays. A flipped byte is caught by the checksum and named; no index = no
checkpoint; `shardflow checkpoint consolidate` gives the whole tensors.
"""

import os
import re

import numpy as np
import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

FULLS = r"""
import numpy as np
def fulls():
    g = np.random.default_rng(1234)
    f = lambda *s: g.standard_normal(s).astype(np.float32)
    return {"s0": f(7, 5), "s1": f(4, 6), "b": f(3), "blk": f(6, 4), "p": f(5), "big": f(64, 32),
            "plain": f(3, 3), "np": np.arange(6, dtype=np.int64).reshape(2, 3)}
"""

TP_MLP = r"""
import numpy as np
import shardflow as sf
from shardflow import nn, optim
def mlp():
    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
def batch(i):
    g = np.random.default_rng(100 + i)
    return sf.tensor(g.standard_normal((6, 8)).astype(np.float32)), \
        sf.tensor(g.standard_normal((6, 8)).astype(np.float32))
def step(model, opt, i):
    x, y = batch(i)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.item())
"""

SAVE = FULLS + TP_MLP + r"""
import sys
import shardflow as sf
import shardflow.distributed.checkpoint as dcp
from shardflow.distributed import sbp, placement, distribute_tensor, from_local
from shardflow.distributed.tensor_parallel import ColwiseParallel, RowwiseParallel, parallelize_module
S, B = sbp.split, sbp.broadcast
d1, d2 = sys.argv[1], sys.argv[2]
p = placement("cpu", [0, 1])
r = p.coordinate[0]
F = fulls()
dt = lambda k, s: distribute_tensor(sf.tensor(F[k]), p, s)
summand = F["p"].astype(np.float64) * (r + 1) / 3.0  # 1/3 + 2/3 of it
sd = {"model": {"s0": dt("s0", S(0)), "s1": dt("s1", S(1)), "b": dt("b", B),
                "blk": dt("blk", S(0, blocks=2)), "big": dt("big", S(0)),
                "p": from_local(sf.tensor(summand.astype(np.float32)), p, sbp.partial_sum, shape=(5,))},
      "plain": sf.tensor(F["plain"]), "np": F["np"], "step": 7,
      "meta": {"name": "run-a", "betas": (0.9, 0.95), 3: None}}
idx = dcp.save(sd, storage_writer=dcp.FileSystemWriter(d1, block_size=256))
assert sorted(idx["files"]) == sorted(f"__{i}_{idx['save_id']}.safetensors" for i in range(2)), idx["files"]
assert idx["tensors"]["model.s1"]["saved_as"] == {"placement": [0, 1], "sbp": ["S(1)"]}

# tensor parallel MLP: two AdamW steps, save, then a third step (the reference for resume)
model = mlp()
parallelize_module(model, p, {"0": ColwiseParallel(), "2": RowwiseParallel()})
opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
losses = [step(model, opt, i) for i in range(2)]
msd, osd = dcp.get_state_dict(model, opt)
assert osd["state"]["0.weight"]["exp_avg"].is_global
dcp.save({"model": msd, "optim": osd, "losses": losses}, checkpoint_id=d2)
l3 = step(model, opt, 2)
if r == 0:
    print("TP_LOSSES", losses, l3)
"""

LOAD3 = FULLS + r"""
import sys
import shardflow as sf
import shardflow.distributed.checkpoint as dcp
from shardflow.distributed import sbp, placement, distribute_tensor, layout
S, B = sbp.split, sbp.broadcast
d1 = sys.argv[1]
p = placement("cpu", [0, 1, 2])
F = fulls()
new = {"s0": S(1), "s1": S(0), "b": S(0), "blk": B, "big": S(0), "p": S(0)}
junk = lambda k: sf.tensor(np.full(F[k].shape, -9, F[k].dtype))
tgt = {"model": {k: distribute_tensor(junk(k), p, s) for k, s in new.items()},
       "plain": distribute_tensor(junk("plain"), p, S(1)), "np": np.zeros((2, 3), np.int64),
       "step": 0, "meta": {"name": None, "betas": None, 3: 1}}
reader = dcp.FileSystemReader(d1)
dcp.load(tgt, storage_reader=reader)
for k, s in new.items():
    t = tgt["model"][k]
    want = layout.take(F[k], layout.local_index(F[k].shape, p.shape, p.coordinate, (s,)))
    assert t.to_local().numpy().shape == want.shape, (k, t.to_local().numpy().shape, want.shape)
    assert np.allclose(t.to_local().numpy(), want, rtol=1e-6, atol=1e-6), k
    assert np.allclose(t.numpy(), F[k], rtol=1e-6, atol=1e-6), k
assert np.array_equal(tgt["plain"].numpy(), F["plain"]) and np.array_equal(tgt["np"], F["np"])
assert tgt["step"] == 7 and tgt["meta"] == {"name": "run-a", "betas": (0.9, 0.95), 3: None}, tgt
# a partial-sum target: coordinate 0 holds the value, the others zeros; the logical sum is it
pt = {"model": {"b": distribute_tensor(junk("b"), p, sbp.partial_sum)}}
dcp.load(pt, checkpoint_id=d1)
assert np.allclose(pt["model"]["b"].numpy(), F["b"])
assert np.allclose(pt["model"]["b"].to_local().numpy(), F["b"] if p.coordinate[0] == 0 else 0)
# bytes: "big" (8 KiB, 256-byte CRC blocks) is read about one third per rank, not whole
r2 = dcp.FileSystemReader(d1)
dcp.load({"model": {"big": distribute_tensor(junk("big"), p, S(0))}}, storage_reader=r2)
need = tgt["model"]["big"].to_local().numpy().nbytes
assert need <= r2.bytes_read <= need + 2 * 2 * 256, (r2.bytes_read, need)
# a plain tensor whose shape differs across ranks (a shard passed as a plain tensor) is
# refused on every rank before anything is written
import os
try:
    dcp.save({"x": sf.zeros(p.coordinate[0] + 2)}, checkpoint_id=d1 + "_bad")
    raise AssertionError("not refused")
except ValueError as e:
    assert "'x' has shape (3,)" in str(e) and "get_state_dict" in str(e), e
assert not [f for f in os.listdir(d1 + "_bad") if f.endswith(".safetensors") or f == "index.json"]
print("LOAD3_OK", p.coordinate[0], r2.bytes_read, need)
"""


def _fulls():
    ns: dict = {}
    exec(FULLS, ns)
    return ns["fulls"]()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One 2-rank job: the layout checkpoint and the TP checkpoint (with its 3rd-step loss)."""
    root = tmp_path_factory.mktemp("dcp")
    d1, d2 = str(root / "layouts"), str(root / "tp")
    res = run_mpi(SAVE, n=2, timeout=90, args=(d1, d2)).check()
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("TP_LOSSES"))
    return d1, d2, line


def test_save_2_load_3_reshards(saved):
    d1, _, _ = saved
    res = run_mpi(LOAD3, n=3, timeout=90, args=(d1,)).check()
    assert res.stdout.count("LOAD3_OK") == 3, res.output


def test_save_2_load_1_plain_and_consolidate(saved, tmp_path):
    import shardflow as sf
    import shardflow.distributed.checkpoint as dcp
    from shardflow.cli.checkpoint import main as ckpt_main

    d1, _, _ = saved
    F = _fulls()
    tgt = {"model": {k: sf.zeros(*F[k].shape) for k in ("s0", "s1", "b", "blk", "big", "p")},
           "plain": sf.zeros(3, 3), "np": np.zeros((2, 3), np.int64), "step": 0,
           "meta": {"name": None, "betas": None, 3: 1}}
    dcp.load(tgt, checkpoint_id=d1)
    for k in ("s0", "s1", "b", "blk", "big", "p"):
        np.testing.assert_allclose(tgt["model"][k].numpy(), F[k], rtol=1e-6, atol=1e-6, err_msg=k)
    assert np.array_equal(tgt["np"], F["np"]) and tgt["step"] == 7
    assert ckpt_main(["info", d1]) == 0
    assert ckpt_main(["info", str(tmp_path)]) == 1  # not a checkpoint: a message, no traceback
    out = str(tmp_path / "one.safetensors")
    assert ckpt_main(["consolidate", d1, out]) == 0
    whole = sf.load(out)
    for k in ("s0", "s1", "blk", "big"):
        np.testing.assert_array_equal(whole["model"][k].numpy(), F[k])
    assert whole["step"] == 7 and whole["meta"]["betas"] == (0.9, 0.95)
    # and back: one file -> a one-rank sharded folder that loads the same
    d3 = str(tmp_path / "again")
    assert ckpt_main(["shard", out, d3]) == 0
    tgt2 = {"model": {"s1": sf.zeros(4, 6)}}
    dcp.load(tgt2, checkpoint_id=d3)
    np.testing.assert_array_equal(tgt2["model"]["s1"].numpy(), F["s1"])


def test_tp2_resumes_on_1_rank(saved):
    """TP=2 checkpoint after 2 AdamW steps -> plain model + AdamW on one rank: same 3rd step."""
    import shardflow.distributed.checkpoint as dcp
    from shardflow import optim

    _, d2, line = saved
    ns: dict = {}
    exec(TP_MLP, ns)
    parts = line.split(maxsplit=1)[1].rsplit(maxsplit=1)
    tp_l3 = float(parts[1])
    model = ns["mlp"]()
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    msd, osd = dcp.get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "losses": None}
    dcp.load(state, checkpoint_id=d2)
    dcp.set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert float(opt.state[model[0].weight]["step"].item()) == 2.0
    # one process's run of the same three steps is the reference
    ref = ns["mlp"]()
    ref_opt = optim.AdamW(ref.parameters(), lr=0.05, weight_decay=0.1)
    ref_losses = [ns["step"](ref, ref_opt, i) for i in range(3)]
    np.testing.assert_allclose(state["losses"], ref_losses[:2], rtol=1e-5)
    l3 = ns["step"](model, opt, 2)
    np.testing.assert_allclose([l3, tp_l3], [ref_losses[2]] * 2, rtol=1e-5)
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


KILLED_SAVE = r"""
import os, sys
import numpy as np
import shardflow as sf
import shardflow.distributed.checkpoint as dcp
from shardflow.distributed import sbp, placement, distribute_tensor
d, stage, victim = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = placement("cpu", [0, 1])
def state(v):
    return {"w": distribute_tensor(sf.full((5, 4), float(v)), p, sbp.split(0)),
            "plain": sf.full((3,), float(v)), "step": v}
dcp.save(state(1), checkpoint_id=d)  # the previous checkpoint
def hook(at, rank):
    if at == stage and rank == victim:
        os._exit(7)
dcp.save(state(2), storage_writer=dcp.FileSystemWriter(d, fault_hook=hook))
print("UNREACHED")
"""


@pytest.mark.parametrize("stage,victim", [("shard_before_rename", 1), ("index_before_rename", 0)])
def test_killed_during_save_keeps_previous(tmp_path, stage, victim):
    import shardflow as sf
    import shardflow.distributed.checkpoint as dcp

    d = str(tmp_path / "ck")
    res = run_mpi(KILLED_SAVE, n=2, timeout=60, args=(d, stage, victim))
    assert res.returncode != 0 and not res.timed_out and "UNREACHED" not in res.stdout, res.output
    assert res.elapsed < 30 and not res.leftover, res.output
    # prterun names the process that died first: "[prterun-<host>-<pid>@<job>,<rank>]", exit 7
    assert re.search(rf"@\d+,{victim}\]\s+Exit code:\s+7", res.output), res.output
    names = sorted(os.listdir(d))
    strays = [n for n in names if n.endswith(".tmp")]
    assert strays, names  # the victim's temp file is left behind (os._exit runs no cleanup)
    tgt = {"w": sf.zeros(5, 4), "plain": sf.zeros(3), "step": 0}
    dcp.load(tgt, checkpoint_id=d)  # the previous save, not a mix
    assert tgt["step"] == 1 and float(tgt["w"].numpy().max()) == 1.0 == float(tgt["w"].numpy().min())
    # the next save cleans every stray: temp files and shard files the index does not name
    idx = dcp.save({"w": sf.full((5, 4), 3.0), "step": 3}, checkpoint_id=d, no_dist=True)
    assert sorted(os.listdir(d)) == sorted(["index.json", *idx["files"]]), os.listdir(d)


def test_corruption_and_missing_index(tmp_path):
    import shardflow as sf
    import shardflow.distributed.checkpoint as dcp

    d = str(tmp_path / "ck")
    w = np.arange(4096, dtype=np.float32).reshape(64, 64)
    idx = dcp.save({"w": sf.tensor(w), "b": sf.ones(3)},
                   storage_writer=dcp.FileSystemWriter(d, block_size=1024), no_dist=True)
    sh = idx["tensors"]["w"]["shards"][0]
    path = os.path.join(d, sh["file"])
    with open(path, "r+b") as f:  # flip one byte in the last block of "w"
        f.seek(sh["byte_offset"] + sh["byte_length"] - 5)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))
    tgt = {"w": sf.zeros(64, 64), "b": sf.zeros(3)}
    with pytest.raises(dcp.CheckpointError, match=r"is corrupt: tensor 'w'.*CRC-32") as e:
        dcp.load(tgt, checkpoint_id=d)
    assert sh["file"] in str(e.value)
    assert float(tgt["b"].numpy().sum()) == 0.0  # nothing was loaded
    # only the first rows are needed: their blocks are intact, so that read succeeds
    from shardflow.distributed.checkpoint.loader import _read_piece
    r = dcp.FileSystemReader(d)
    got = _read_piece(r, sh, [0, 0], [8, 64], np.dtype(np.float32), 1024, "w")
    np.testing.assert_array_equal(got, w[:8])
    assert r.bytes_read == 8 * 64 * 4
    # shape mismatch and missing key: clear errors
    with pytest.raises(dcp.CheckpointError, match=r"saved with shape \(3,\).*has shape \(4,\)"):
        dcp.load({"b": sf.zeros(4)}, checkpoint_id=d)
    with pytest.raises(dcp.CheckpointError, match=r"'nope'.*missing in the checkpoint"):
        dcp.load({"nope": sf.zeros(4)}, checkpoint_id=d)
    os.unlink(os.path.join(d, "index.json"))
    with pytest.raises(dcp.CheckpointError, match="index.json is missing.*never committed"):
        dcp.load({"b": sf.zeros(3)}, checkpoint_id=d)
