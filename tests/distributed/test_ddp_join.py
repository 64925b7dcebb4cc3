"""DistributedDataParallel: uneven inputs with ``join()``, and the unused-parameter error.

``join()`` is checked against the single-process computation PyTorch's semantics imply.
Rank r holds ``2 + r`` batches. In iteration t the ranks that still have a batch (the set
A_t) train; the others shadow them with zero gradients. So the update of iteration t is
SGD on ``sum_{r in A_t} mse(batch_{r,t}) / W`` (``divide_by_initial_world_size=True``,
the default) or ``/ |A_t|``; ranks that joined skip the optimizer step, and at the end
every rank holds the model of the last rank to finish. Each rank rebuilds every rank's
batches from seeds and computes that reference with PyTorch.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


def _reference(world: int, divide_initial: bool, init: list, lr: float = 0.2) -> list:
    """PyTorch, one process: iteration t trains on the batches of the ranks that have one."""
    import numpy as np
    import torch

    def batches(rank):
        g = np.random.default_rng(500 + rank)
        return [(g.standard_normal((3, 5)).astype(np.float32),
                 g.standard_normal((3, 2)).astype(np.float32)) for _ in range(2 + rank)]

    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        for q, a in zip(tmodel.parameters(), init):
            q.copy_(torch.from_numpy(a))
    every = [batches(k) for k in range(world)]
    for t in range(max(len(b) for b in every)):
        active = [k for k in range(world) if t < len(every[k])]
        tmodel.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(tmodel(torch.from_numpy(every[k][t][0])),
                                                torch.from_numpy(every[k][t][1])) for k in active)
        (loss / (world if divide_initial else len(active))).backward()
        with torch.no_grad():
            for q in tmodel.parameters():
                q -= lr * q.grad
    return [q.detach().numpy() for q in tmodel.parameters()]


PROGRAMS = "tests.distributed.programs."


def _case_ok(res, name, n):
    """The case ``name`` of a programs_in_one_job run returned on every rank 0..n-1."""
    __tracebackhide__ = True
    res.check()
    head = f"CASE {name} OK "
    done = {ln[len(head):] for ln in res.stdout.splitlines() if ln.startswith(head)}
    assert done == {str(k) for k in range(n)}, f"case {name} did not return everywhere\n{res.output}"


@pytest.fixture(scope="module")
def two_rank_job(tmp_path_factory):
    """One 2-rank launch: the unused-parameters program, then the joined loop
    (``initial``); returns the result and the join's output folder."""
    out = tmp_path_factory.mktemp("ddp_join_2")
    res = run_program(PROGRAMS + "programs_in_one_job", n=2, timeout=120,
                      args=["ddp_unused_parameters_named", f"ddp_join_uneven_inputs:initial:{out}"])
    return res, out


@pytest.mark.parametrize("n,divide", [(2, "initial"), (3, "active")])
def test_join_with_uneven_batches_matches_single_process(n, divide, tmp_path, request):
    import numpy as np

    if n == 2:  # part of the 2-rank job (two_rank_job)
        res, tmp_path = request.getfixturevalue("two_rank_job")
    else:
        res = run_program(PROGRAMS + "programs_in_one_job", n=n, timeout=120,
                          args=[f"ddp_join_uneven_inputs:{divide}:{tmp_path}"])
    _case_ok(res, "ddp_join_uneven_inputs", n)
    with np.load(tmp_path / "init.npz") as f:
        init = [f[f"arr_{i}"] for i in range(len(f.files))]
    want = _reference(n, divide == "initial", init)
    for k in range(n):  # every rank, joined early or not, ends with the reference model
        with np.load(tmp_path / f"rank{k}.npz") as f:
            for i, w in enumerate(want):
                assert np.abs(f[f"arr_{i}"] - w).max() < 2e-5, (k, i)
    # throw_on_early_termination: PyTorch's messages, on every rank
    assert "RAISED 0: Rank 0 exhausted all inputs." in res.stdout, res.output
    for k in range(1, n):
        assert (f"RAISED {k}: Detected at least one rank that exhausted inputs. Throwing across "
                "all ranks.") in res.stdout, res.output


def test_unused_parameters_are_named_and_counted(two_rank_job):
    _case_ok(two_rank_job[0], "ddp_unused_parameters_named", 2)


def test_join_in_a_world_of_one():
    import numpy as np

    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.nn.functional as F
    from shardflow.comm import LocalCommunicator
    from shardflow.nn.parallel import DistributedDataParallel as DDP

    model = nn.Linear(3, 1)
    ddp = DDP(model, process_group=LocalCommunicator())
    ref = nn.Linear(3, 1)
    ref.load_state_dict(model.state_dict())
    x, y = sf.randn(4, 3), sf.randn(4, 1)
    with ddp.join():
        F.mse_loss(ddp(x), y).backward()
    F.mse_loss(ref(x), y).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert np.allclose(p.grad.numpy(), q.grad.numpy())
