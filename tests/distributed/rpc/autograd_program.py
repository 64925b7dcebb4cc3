"""Distributed autograd and DistributedOptimizer on 3 workers (test_rpc_autograd.py).
worker1 and worker2 own one Linear stage each; worker0 drives a graph that crosses RPC in
both directions, twice through worker1 (once nested: worker1 -> worker2), with the input
used by two calls; it prints the gradients every worker holds in the context, the .grad
fields (must stay untouched) and the parameters after one DistributedOptimizer step."""

import json
import os

import numpy as np

import shardflow as torch
import shardflow.distributed.autograd as dist_autograd
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow.distributed.optim import DistributedOptimizer


class Stage(nn.Module):
    def __init__(self, seed, i, o):
        super().__init__()
        torch.manual_seed(seed)
        self.fc = nn.Linear(i, o)

    def forward(self, x):
        return torch.tanh(self.fc(x))


def run_stage(rref, x):
    return rref.local_value()(x)


def two_hops(rref1, rref2, x):
    h = rref1.local_value()(x)
    return rpc.rpc_sync("worker2", run_stage, args=(rref2, h * 2))


def param_rrefs(rref):
    return [rpc.RRef(p) for p in rref.local_value().parameters()]


def grads_here(rref, cid):
    grads = dist_autograd.get_gradients(cid)
    ps = list(rref.local_value().parameters())
    return {"ctx": [grads[p].tolist() if p in grads else None for p in ps],
            "dotgrad": [p.grad is None for p in ps]}


def params_here(rref):
    return [p.tolist() for p in rref.local_value().parameters()]


def contexts():
    return dist_autograd._get_debug_info()["num_autograd_contexts"]


def data():
    g = np.random.default_rng(0)
    return g.standard_normal((5, 3)).astype(np.float32)


def main():
    rank = int(os.environ["RANK"])
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    R = {"rank": rank}
    if rank == 0:
        s1 = rpc.remote("worker1", Stage, args=(1, 3, 4))
        s2 = rpc.remote("worker2", Stage, args=(2, 4, 2))
        x = torch.tensor(data(), requires_grad=True)
        with dist_autograd.context() as cid:
            h = rpc.rpc_sync("worker1", run_stage, args=(s1, x))
            y = rpc.rpc_sync("worker2", run_stage, args=(s2, h))
            y2 = rpc.rpc_sync("worker1", two_hops, args=(s1, s2, x))
            loss = y.sum() + (y2 * y2).sum()
            dist_autograd.backward(cid, [loss])
            R["loss"] = loss.item()
            R["x_grad"] = dist_autograd.get_gradients(cid)[x].tolist()
            R["x_dotgrad_none"] = x.grad is None
            R["w1"] = rpc.rpc_sync("worker1", grads_here, args=(s1, cid))
            R["w2"] = rpc.rpc_sync("worker2", grads_here, args=(s2, cid))
            R["contexts_inside"] = [rpc.rpc_sync(f"worker{w}", contexts) for w in (1, 2)]
            opt = DistributedOptimizer(optim.SGD, rpc.rpc_sync("worker1", param_rrefs, args=(s1,))
                                       + rpc.rpc_sync("worker2", param_rrefs, args=(s2,)), lr=0.5)
            opt.step(cid)
            try:
                with dist_autograd.context():
                    pass
            except RuntimeError as e:
                R["nested_error"] = str(e)
        R["params_after"] = [rpc.rpc_sync("worker1", params_here, args=(s1,)),
                             rpc.rpc_sync("worker2", params_here, args=(s2,))]
        import time
        time.sleep(0.3)
        R["contexts_after"] = [contexts()] + [rpc.rpc_sync(f"worker{w}", contexts) for w in (1, 2)]
        try:
            dist_autograd.get_gradients(cid)
        except RuntimeError as e:
            R["released_error"] = str(e)
    rpc.shutdown()
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
