"""`shardflow run` sets torchrun's variables: PyTorch's torchrun DDP tutorial program (imports
changed to shardflow) runs under 2 real ranks and matches PyTorch on the full batch."""

import importlib.util
import json
import os

import numpy as np
import pytest

from shardflow.testing.mpi import launch_cli

pytestmark = pytest.mark.mpi

PROGRAM = os.path.join(os.path.dirname(__file__), "torchrun_ddp_program.py")


def _program_module():
    spec = importlib.util.spec_from_file_location("torchrun_ddp_program", PROGRAM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _torch_reference(prog, world):
    """The same training in one PyTorch process: DDP's update is the mean of the per-rank
    mean-loss gradients, i.e. the gradient of the mean of the per-rank losses."""
    import torch

    model = torch.nn.Sequential()
    model.net1, model.relu, model.net2 = torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 5)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in prog.initial_state().items()})
    opt = torch.optim.SGD(model.parameters(), lr=prog.LR)
    per = prog.GLOBAL_BATCH // world
    losses = [[] for _ in range(world)]
    for step in range(prog.STEPS):
        x, y = (torch.from_numpy(a) for a in prog.global_batch(step))
        opt.zero_grad()
        per_rank = [torch.nn.functional.mse_loss(model(x[r * per:(r + 1) * per]), y[r * per:(r + 1) * per])
                    for r in range(world)]
        torch.stack(per_rank).mean().backward()
        opt.step()
        for r, loss in enumerate(per_rank):
            losses[r].append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def test_torchrun_tutorial_program_matches_pytorch_under_two_ranks():
    res = launch_cli(["-n", "2", "--no-prefix", PROGRAM, "--backend", "nccl"], timeout=90)
    res.check()
    results = sorted((json.loads(line[len("RESULT "):]) for line in res.stdout.splitlines()
                      if line.startswith("RESULT ")), key=lambda r: r["rank"])
    assert [r["rank"] for r in results] == [0, 1], res.output
    # torchrun's variables, one node, one role; the run id is one uuid for the job
    assert results[0]["env"]["run_id"] == results[1]["env"].pop("run_id") and results[0]["env"].pop("run_id")
    for r in results:
        assert r["env"] == {"RANK": str(r["rank"]), "LOCAL_RANK": str(r["rank"]), "WORLD_SIZE": "2",
                            "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
                            "GROUP_RANK": "0", "ROLE_RANK": str(r["rank"]), "ROLE_WORLD_SIZE": "2",
                            "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default", "TORCHELASTIC_RESTART_COUNT": "0",
                            "TORCHELASTIC_MAX_RESTARTS": "0", "elastic": True}
        assert r["local_rank"] == r["rank"] and r["world_size"] == 2
    # backend="nccl" on CPU runs on MPI and says so once (rank 0 only)
    assert res.stderr.count("no CUDA device here") == 1, res.stderr
    ref_losses, ref_params = _torch_reference(_program_module(), 2)
    for r in results:
        np.testing.assert_allclose(r["losses"], ref_losses[r["rank"]], rtol=1e-5, atol=1e-6)
        for k, v in ref_params.items():
            np.testing.assert_allclose(np.array(r["params"][k], np.float32), v, rtol=1e-5, atol=1e-6,
                                       err_msg=k)
    assert ref_losses[0] != ref_losses[1]  # the ranks did see different data
