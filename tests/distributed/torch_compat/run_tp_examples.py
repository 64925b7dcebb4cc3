"""Rank program (2 ranks): PyTorch's tensor-parallel examples (``tp_examples.py``) on torch
and, with only the imports changed, on shardflow, from the same weights and inputs. Checks the
losses of every step and every parameter's whole value after training against torch, and that
torch's and shardflow's parameters are DTensors / global tensors laid out alike."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the worktree (tests package)

from tests.distributed.torch_compat.pair import close, init_pair, whole  # noqa: E402

r, n = init_pair()

import torch  # noqa: E402

import shardflow as sf  # noqa: E402
from shardflow.testing.parity import load_torch_file  # noqa: E402

HERE = Path(__file__).parent
th_prog = load_torch_file(HERE / "tp_examples.py", use_shardflow=False, name="tp_examples_torch")
sf_prog = load_torch_file(HERE / "tp_examples.py", use_shardflow=True, name="tp_examples_sf")
torch.set_num_threads(1)


def run_both(fn, th_inputs, sf_inputs, seed, **kw):
    """``fn`` of both programs; torch's initial weights (seeded, equal on every rank) are
    copied into shardflow's model by the program's ``load`` hook."""
    torch.manual_seed(seed)
    held = {}

    def th_load(model):
        held["state"] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def sf_load(model):
        model.load_state_dict({k: sf.tensor(v.numpy()) for k, v in held["state"].items()})

    th_model, th_losses = getattr(th_prog, fn)(th_inputs, th_load, **kw)
    sf_model, sf_losses = getattr(sf_prog, fn)(sf_inputs, sf_load, **kw)
    return th_model, th_losses, sf_model, sf_losses


def kinds(placements):
    return [("S", p.dim) if p.is_shard() else ("R",) if p.is_replicate() else ("P",)
            for p in placements]


def compare_params(th_model, sf_model, what, tol):
    th_params = dict(th_model.named_parameters())
    sf_params = dict(sf_model.named_parameters())
    assert list(th_params) == list(sf_params), (what, list(th_params), list(sf_params))
    for name, tp in th_params.items():
        sp = sf_params[name]
        # laid out alike: a DTensor in torch is a global tensor here, with the same placements
        assert isinstance(tp, torch.distributed.tensor.DTensor) == sp.is_global, (what, name)
        if sp.is_global:
            assert isinstance(sp, sf.distributed.tensor.DTensor), (what, name)
            # shardflow lays a parameter of a sub-mesh plan (mesh["tp"]) out on the whole mesh,
            # Replicate on the other dimensions (docs/GLOBAL.md); compare torch's dimensions
            names = sp.device_mesh.mesh_dim_names or ()
            mine = kinds(sp.placements)
            if tp.device_mesh.ndim < sp.device_mesh.ndim:
                keep = [names.index(d) for d in tp.device_mesh.mesh_dim_names]
                assert all(mine[k] == ("R",) for k in range(len(mine)) if k not in keep), (
                    what, name, sp.placements)
                mine = [mine[k] for k in keep]
            assert kinds(tp.placements) == mine, (what, name, tp.placements, sp.placements)
            close(sp.to_local().detach().numpy(), tp.to_local().detach().numpy(),
                  f"{what} {name} local shard", tol)
        close(whole(sp), whole(tp), f"{what} {name}", tol)


rng = np.random.default_rng(0)

# -- tensor_parallel_example: every rank the same input --------------------------------------
X = [rng.random((20, 10), dtype=np.float32) for _ in range(3)]
th_model, th_losses, sf_model, sf_losses = run_both(
    "tensor_parallel_example", [torch.from_numpy(x) for x in X], [sf.tensor(x) for x in X], 0,
    optimizer_first=False)
close(sf_losses, th_losses, "TP losses", 1e-4)
compare_params(th_model, sf_model, "TP", 1e-4)

# As written (optimizer made before parallelize_module): in PyTorch that optimizer holds the
# replaced parameters, so its steps change nothing; shardflow lays the parameters out in place,
# so the same program trains, exactly as torch does with the optimizer made after.
torch.manual_seed(0)
held = {}
th_first_model, th_first_losses = th_prog.tensor_parallel_example(
    [torch.from_numpy(x) for x in X],
    lambda m: held.setdefault("s", {k: v.detach().clone() for k, v in m.state_dict().items()}))
sf_first_model, sf_first_losses = sf_prog.tensor_parallel_example(
    [sf.tensor(x) for x in X],
    lambda m: m.load_state_dict({k: sf.tensor(v.numpy()) for k, v in held["s"].items()}))
close(whole(th_first_model.in_proj.weight), held["s"]["in_proj.weight"].numpy(),
      "torch, optimizer first: weights unchanged", 0.0)
close(sf_first_losses, th_losses, "shardflow, optimizer first: trains as intended", 1e-4)
compare_params(th_model, sf_first_model, "TP optimizer first", 1e-4)

# -- sequence_parallel_example: every rank its own rows ---------------------------------------
X = [rng.random((2, 20, 10), dtype=np.float32) for _ in range(3)]  # (rank, rows, features)
th_model, th_losses, sf_model, sf_losses = run_both(
    "sequence_parallel_example", [torch.from_numpy(x[r]) for x in X], [sf.tensor(x[r]) for x in X], 1)
close(sf_losses, th_losses, "SP losses (this rank's rows)", 1e-4)
compare_params(th_model, sf_model, "SP", 1e-4)
# and the single-process computation: SP on 2 ranks = the ToyModel on all 40 rows
sf.manual_seed(0)
ref = sf_prog.ToyModel()
torch.manual_seed(1)
ref_t = th_prog.ToyModel()
ref.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in ref_t.state_dict().items()})
opt = sf.optim.AdamW(ref.parameters(), lr=0.25, foreach=True)
for x in X:
    out = ref(sf.tensor(x.reshape(-1, 10)))
    out.sum().backward()
    opt.step()
close(whole(sf_model.in_proj.weight), ref.in_proj.weight.detach().numpy(), "SP vs one process", 1e-4)

# -- fsdp_tp_example's 2-D mesh and Llama TP/SP plan (dp=1, tp=2) -----------------------------
T = [[rng.integers(0, 32, (2, 8)) for _ in range(2)]]  # [dp_rank][step] tokens (batch, seq)
th_model, th_losses, sf_model, sf_losses = run_both(
    "fsdp_tp_example", [[torch.from_numpy(t) for t in T[0]]], [[sf.tensor(t) for t in T[0]]], 2)
close(sf_losses, th_losses, "2-D losses", 1e-4)
compare_params(th_model, sf_model, "2-D", 2e-4)

print("TP EXAMPLES OK", r, flush=True)
