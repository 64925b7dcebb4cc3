"""RemoteModule on 3 workers (test_rpc_remote_module.py): a Linear made on worker1 from
worker0, called with forward / forward_async, trained one step with distributed autograd +
DistributedOptimizer over remote_parameters(), and sent to worker2, which calls it too."""

import json
import os

import numpy as np

import shardflow as torch
import shardflow.distributed.autograd as dist_autograd
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow.distributed.nn import RemoteModule
from shardflow.distributed.optim import DistributedOptimizer


def seeded_linear(i, o):
    torch.manual_seed(3)
    return nn.Linear(i, o)


def call_it(remote_module, x):
    return remote_module(x)


def is_training(module_rref):
    return module_rref.local_value().training


def data():
    return np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)


def main():
    rank = int(os.environ["RANK"])
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    R = {"rank": rank}
    if rank == 0:
        m = RemoteModule("worker1/cpu", seeded_linear, args=(3, 2))
        x = torch.tensor(data())
        R["forward"] = m(x).tolist()
        R["forward_async"] = m.forward_async(x).wait().tolist()
        R["from_worker2"] = rpc.rpc_sync("worker2", call_it, args=(m, x)).tolist()
        params = m.remote_parameters()
        R["n_params"] = [len(params), params[0].owner_name()]
        opt = DistributedOptimizer(optim.SGD, params, lr=0.1)
        with dist_autograd.context() as cid:
            loss = (m(x) ** 2).sum()
            dist_autograd.backward(cid, [loss])
            opt.step(cid)
        R["after_step"] = m(x).tolist()
        m.eval()
        R["training_remote"] = rpc.rpc_sync("worker1", is_training, args=(m.get_module_rref(),))
        errs = []
        for call in (lambda: m.parameters(), lambda: m.to("cpu"), lambda: m.state_dict()):
            try:
                call()
            except ValueError as e:
                errs.append(str(e))
        R["not_supported"] = errs
        r2 = RemoteModule.init_from_module_rref("worker1", m.get_module_rref())
        R["init_from_rref"] = r2(x).tolist()
        R["bad_device"] = None
        try:
            RemoteModule("/cpu", nn.Linear, args=(1, 1))
        except ValueError as e:
            R["bad_device"] = str(e)
    rpc.shutdown()
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
