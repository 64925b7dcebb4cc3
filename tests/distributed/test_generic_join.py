"""torch's generic ``Join`` (``distributed/algorithms/join.py``) on 2 ranks with several
joinables: DDP and a ``Joinable`` of one's own, DDP and ZeroRedundancyOptimizer (rows
sharded: the joined rank's step and all-gather), against the single-process PyTorch
computation torch's semantics imply, and ``throw_on_early_termination``'s messages
(torch's). The tutorial's programs (DDP, DDP + ZeroRedundancyOptimizer, its Counter) run
against torch itself in tests/parity/test_public_programs_more_i.py."""

import numpy as np
import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


def _reference(init: list, world: int = 2, lr: float = 0.3) -> list:
    """Iteration t: SGD on the mean over the active ranks of their batch's loss
    (divide_by_initial_world_size=False); the last joiner's model at the end."""
    import torch

    from tests.distributed.programs.generic_join_cases import batches

    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    with torch.no_grad():
        for q, a in zip(model.parameters(), init):
            q.copy_(torch.from_numpy(a))
    every = [batches(k) for k in range(world)]
    for t in range(max(map(len, every))):
        active = [k for k in range(world) if t < len(every[k])]
        model.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(model(torch.from_numpy(every[k][t][0])),
                                                torch.from_numpy(every[k][t][1])) for k in active)
        (loss / len(active)).backward()
        with torch.no_grad():
            for q in model.parameters():
                q -= lr * q.grad
    return [q.detach().numpy() for q in model.parameters()]


def _zero_reference(init: list, world: int = 2, lr: float = 0.3) -> list:
    """DDP + ZeroRedundancyOptimizer(SGD) under Join (divide_by_initial_world_size=True):
    each rank steps the rows it owns (torch.chunk's split of dim 0) with the gradient it
    holds: the all-reduced one of this iteration while it trains, the last one it had once it
    has joined (DDP's shadowing does not write .grad); the rows are then gathered."""
    import torch

    from tests.distributed.programs.generic_join_cases import batches

    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    with torch.no_grad():
        for q, a in zip(model.parameters(), init):
            q.copy_(torch.from_numpy(a))
    every = [batches(k) for k in range(world)]
    held = [None] * world  # the gradient each rank holds
    for t in range(max(map(len, every))):
        active = [k for k in range(world) if t < len(every[k])]
        model.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(model(torch.from_numpy(every[k][t][0])),
                                                torch.from_numpy(every[k][t][1])) for k in active)
        (loss / world).backward()
        for k in active:
            held[k] = [q.grad.clone() for q in model.parameters()]
        with torch.no_grad():
            for i, q in enumerate(model.parameters()):
                for k, rows in enumerate(torch.arange(q.shape[0]).chunk(world)):
                    q[rows] -= lr * held[k][i][rows]
    return [q.detach().numpy() for q in model.parameters()]


def test_join_with_ddp_and_a_custom_joinable_matches_torchs_semantics(tmp_path):
    res = run_program("tests.distributed.programs.generic_join_cases", n=2, timeout=120,
                      args=[str(tmp_path)])
    res.check()
    with np.load(tmp_path / "init.npz") as f:
        init = [f[f"arr_{i}"] for i in range(len(f.files))]
    want = _reference(init)
    for k in range(2):
        with np.load(tmp_path / f"rank{k}.npz") as f:
            got = [f[f"arr_{i}"] for i in range(len(f.files))]
        for i, w in enumerate(want):
            np.testing.assert_allclose(got[i], w, rtol=1e-5, atol=1e-6, err_msg=f"rank {k} parameter {i}")
        # 2 + 3 ones all-reduced while both ran, 1 while rank 1 ran alone; the last joiner's
        assert got[-1].tolist() == [5.0], (k, got[-1])
    with np.load(tmp_path / "zinit.npz") as f:
        init = [f[f"arr_{i}"] for i in range(len(f.files))]
    want = _zero_reference(init)
    for k in range(2):
        with np.load(tmp_path / f"zrank{k}.npz") as f:
            for i, w in enumerate(want):
                np.testing.assert_allclose(f[f"arr_{i}"], w, rtol=1e-5, atol=1e-6,
                                           err_msg=f"ZeRO: rank {k} parameter {i}")
    assert "RAISED 0: Rank 0 exhausted all inputs." in res.stdout, res.output
    assert ("RAISED 1: Detected at least one rank that exhausted inputs. Throwing across all "
            "ranks.") in res.stdout, res.output


def test_join_refuses_what_torch_refuses():
    """No joinable, an object that is not a Joinable, joinables on different groups."""
    import shardflow as sf
    from shardflow.comm import LocalCommunicator
    from shardflow.distributed.algorithms.join import Join
    from shardflow.nn.parallel import DistributedDataParallel as DDP

    with pytest.raises(ValueError, match="at least one joinable"):
        Join([])
    ddp = DDP(sf.nn.Linear(2, 1), process_group=LocalCommunicator())
    from shardflow.distributed.algorithms.join import Joinable
    from shardflow.distributed.optim import ZeroRedundancyOptimizer

    zero = ZeroRedundancyOptimizer(ddp.parameters(), sf.optim.Adam, process_group=LocalCommunicator())
    assert isinstance(ddp, Joinable) and isinstance(zero, Joinable)  # as torch's classes are
    assert not isinstance(sf.optim.SGD(ddp.parameters(), lr=0.1), Joinable)
    with pytest.raises(TypeError, match="Join got SGD, which is not a Joinable"):
        Join([ddp, sf.optim.SGD(ddp.parameters(), lr=0.1)])
    other = DDP(sf.nn.Linear(2, 1), process_group=LocalCommunicator())
    with pytest.raises(ValueError, match="Using join context manager with multiple process groups"):
        Join([ddp, other])
    with pytest.raises(TypeError, match="unknown keyword arguments \\['bogus'\\]"):
        Join([ddp, other], bogus=1)
