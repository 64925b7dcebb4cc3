"""ParameterServerStrategy on plain processes (a TF_CONFIG dict, no MPI), async mode: one
process per task of ``argv[0]`` (JSON ``{"tf_config": ...}``). Worker 1 kills itself (SIGKILL)
at step 2; the server prints ``STATS {json}`` when it ends, the surviving worker ``FINISHED``
after its 10 steps. The test starts the three processes and checks who was lost."""

import json
import os

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.distributed.strategies import ParameterServerStrategy


def main(argv):
    cfg = json.loads(argv[0])
    s = ParameterServerStrategy(cfg["tf_config"], mode="async", staleness=1, lr=0.1,
                                worker_timeout=2.0, heartbeat=0.2)
    if s.task_type == "ps":
        print("STATS", json.dumps(s.join()), flush=True)
        return
    sf.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    s.broadcast_parameters(model.parameters())
    for t in range(10):
        if s.task_id == 1 and t == 2:
            os.kill(os.getpid(), 9)
        x = np.random.default_rng(t).standard_normal((8, 4)).astype(np.float32)
        model.zero_grad()
        F.mse_loss(model(sf.tensor(x)), sf.tensor(x[:, :1])).backward()
        s.apply_gradients(None, model.parameters())
    s.join()
    print("FINISHED", flush=True)
