"""Rank program (2 ranks): torch.distributed's backend names, rooted collectives and the
differentiable collectives of torch.distributed.nn, each compared with torch (CPU, gloo) in
the same processes on the same data."""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.distributed.torch_compat.pair import close, init_pair  # noqa: E402

r, n = init_pair(sf_backend="gloo")  # shardflow's init_process_group("gloo"), then torch's

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402
import torch.distributed.nn.functional as TF  # noqa: E402

import shardflow as sf  # noqa: E402
import shardflow.distributed as dist  # noqa: E402
import shardflow.distributed.nn.functional as SF  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)  # torch's deprecation notes

# ---- backend names ----------------------------------------------------------------------------
assert dist.get_backend() == tdist.get_backend() == "gloo"
sg, tg = dist.new_group([0, 1]), tdist.new_group([0, 1])
assert dist.get_backend(sg) == tdist.get_backend(tg) == "gloo"
assert dist.get_process_group_ranks(sg) == tdist.get_process_group_ranks(tg) == [0, 1]
assert dist.get_global_rank(sg, 1) == tdist.get_global_rank(tg, 1) == 1
assert dist.get_group_rank(sg, 1) == tdist.get_group_rank(tg, 1) == 1
assert dist.is_gloo_available() and dist.is_mpi_available()


def data(rank, shape, seed):
    return np.random.default_rng(100 * seed + rank).standard_normal(shape).astype(np.float32)


# ---- rooted collectives, against torch's gloo ones --------------------------------------------
for dst in (0, 1):
    s, t = sf.tensor(data(r, (3, 2), 1)), torch.tensor(data(r, (3, 2), 1))
    dist.reduce(s, dst=dst)
    tdist.reduce(t, dst=dst)
    if r == dst:
        close(s.numpy(), t.numpy(), f"reduce to {dst}")
    else:  # others keep their input (torch's gloo leaves it unspecified)
        close(s.numpy(), data(r, (3, 2), 1), "reduce: non-destination unchanged", 0)
    s_list = [sf.zeros(3, 2) for _ in range(n)] if r == dst else None
    t_list = [torch.zeros(3, 2) for _ in range(n)] if r == dst else None
    dist.gather(sf.tensor(data(r, (3, 2), 2)), s_list, dst=dst)
    tdist.gather(torch.tensor(data(r, (3, 2), 2)), t_list, dst=dst)
    if r == dst:
        for a, b in zip(s_list, t_list):
            close(a.numpy(), b.numpy(), f"gather to {dst}")
    so, to = sf.zeros(3, 2), torch.zeros(3, 2)
    src_list = [data(k, (3, 2), 3) for k in range(n)]
    dist.scatter(so, [sf.tensor(a) for a in src_list] if r == dst else None, src=dst)
    tdist.scatter(to, [torch.tensor(a) for a in src_list] if r == dst else None, src=dst)
    close(so.numpy(), to.numpy(), f"scatter from {dst}")
    objs = [None] * n if r == dst else None
    tobjs = [None] * n if r == dst else None
    dist.gather_object({"rank": r}, objs, dst=dst)
    tdist.gather_object({"rank": r}, tobjs, dst=dst)
    assert objs == tobjs
    out, tout = [None], [None]
    dist.scatter_object_list(out, [f"to {k}" for k in range(n)] if r == dst else None, src=dst)
    tdist.scatter_object_list(tout, [f"to {k}" for k in range(n)] if r == dst else None, src=dst)
    assert out == tout == [f"to {r}"]
outs = [sf.zeros(2) for _ in range(n)]
dist.all_to_all(outs, [sf.tensor(data(r, (2,), 10 + k)) for k in range(n)])
for k in range(n):  # rank k's input number r
    close(outs[k].numpy(), data(k, (2,), 10 + r), "all_to_all")
work = dist.reduce(sf.tensor(data(r, (2,), 4)), dst=0, async_op=True)
assert work.wait() is True
dist.monitored_barrier()

# ---- torch.distributed.nn.functional: values and input gradients, against torch's ------------


def both(fn_name, shapes, call, seed):
    """Run ``call(lib_functional, inputs)`` on both libraries; loss = sum of outputs times
    fixed rank-dependent weights; compare outputs and every input's gradient."""
    xs = [data(r, s, seed + i) for i, s in enumerate(shapes)]
    s_in = [sf.tensor(x, requires_grad=True) for x in xs]
    t_in = [torch.tensor(x, requires_grad=True) for x in xs]
    s_out, t_out = call(SF, sf, s_in), call(TF, torch, t_in)
    s_out = s_out if isinstance(s_out, tuple | list) else (s_out,)
    t_out = t_out if isinstance(t_out, tuple | list) else (t_out,)
    assert len(s_out) == len(t_out), fn_name
    s_loss, t_loss = 0, 0
    for i, (a, b) in enumerate(zip(s_out, t_out)):
        close(a.detach().numpy(), b.detach().numpy(), f"{fn_name} output {i}")
        w = data(r, tuple(b.shape), 50 + i)
        s_loss = s_loss + (a * sf.tensor(w)).sum()
        t_loss = t_loss + (b * torch.tensor(w)).sum()
    s_loss.backward()
    t_loss.backward()
    for i, (a, b) in enumerate(zip(s_in, t_in)):
        close(a.grad.numpy(), b.grad.numpy(), f"{fn_name} grad {i}")


both("all_reduce", [(3, 4)], lambda F, lib, x: F.all_reduce(x[0] * 2), 20)
both("all_reduce avg", [(3, 4)], lambda F, lib, x: F.all_reduce(x[0], op=(
    dist.ReduceOp.AVG if lib is sf else tdist.ReduceOp.AVG)), 21)
both("all_gather", [(3, 4)], lambda F, lib, x: F.all_gather(x[0]), 22)
for src in (0, 1):
    both(f"broadcast {src}", [(3, 4)], lambda F, lib, x: F.broadcast(x[0], src), 23)
    both(f"gather {src}", [(2, 3)], lambda F, lib, x: F.gather(x[0], dst=src), 24)
    both(f"scatter {src}", [(2, 3)] * n, lambda F, lib, x: F.scatter(list(x), src=src), 25)
both("reduce_scatter", [(2, 3)] * n,
     lambda F, lib, x: F.reduce_scatter(lib.zeros(2, 3), list(x)), 26)
both("all_to_all", [(2, 3)] * n,
     lambda F, lib, x: F.all_to_all([lib.zeros(2, 3) for _ in range(n)], list(x)), 27)
both("all_to_all_single", [(2 * n, 3)],
     lambda F, lib, x: F.all_to_all_single(lib.zeros(2 * n, 3), x[0]), 28)

# reduce: the destination's value and every rank's gradient (torch's non-destination output is
# the backend's leftover, so only the destination's output is compared)
for dst in (0, 1):
    x = data(r, (3,), 30)
    sx, tx = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    so, to = SF.reduce(sx, dst), TF.reduce(tx, dst)
    if r == dst:
        close(so.detach().numpy(), to.detach().numpy(), f"reduce {dst}")
    w = data(0, (3,), 31)  # the same on every rank: only dst's weight reaches the inputs
    (so * sf.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    close(sx.grad.numpy(), tx.grad.numpy(), f"reduce {dst} grad")

# a max all-reduce runs forward, and its backward says it is not differentiable here
m = SF.all_reduce(sf.tensor(data(r, (2,), 40), requires_grad=True), op=dist.ReduceOp.MAX)
try:
    m.sum().backward()
except NotImplementedError as e:
    assert "only ReduceOp.SUM and ReduceOp.AVG" in str(e)
else:
    raise AssertionError("the gradient of a MAX all-reduce did not raise")

print("DIST NAMES OK", r, flush=True)
