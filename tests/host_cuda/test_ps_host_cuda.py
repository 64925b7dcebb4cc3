"""Parameter server with workers whose model lives on ``device="cuda"``, without a GPU.

The workers install CuPy's host stand-in (whose arrays refuse ``np.asarray``, as CuPy's
do): ``PSWorker`` copies parameters and gradients to the host explicitly before they go over
its TCP transport, and copies the pulled values back to each parameter's device. The servers
are plain CPU processes. A run with cuda workers must equal the same run with CPU workers
(the CPU run is itself checked against DDP's result in tests/distributed/test_ps.py).
"""

import json
import os
import subprocess
import sys

import numpy as np

ROLE = r"""
import json, sys
import numpy as np
cfg = json.loads(sys.argv[1])
if cfg.get("device") == "cuda":
    from tests.doubles import host_cuda
    host_cuda.install()  # host_cupy as CuPy
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
from shardflow.distributed.ps import ParameterServer, PSWorker

if cfg["role"] == "server":
    s = ParameterServer(cfg["id"], cfg["workers"], lr=0.05, mode="sync", optimizer="adam")
    print("PORT", s.address[1], flush=True)
    s.serve()
else:
    w, dev = cfg["id"], cfg["device"]
    sf.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)).to(dev)
    m[2].bias.requires_grad_(False)  # no gradient: the worker pushes zeros for it
    ps = PSWorker(m.parameters(), cfg["servers"], w, heartbeat=0.2)
    if w == 0:
        ps.init_params()
    losses = []
    for t in range(4):
        ps.pull()
        g = np.random.default_rng(1000 * w + t)
        x = g.standard_normal((8, 4)).astype(np.float32)
        y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
        loss = F.mse_loss(m(sf.tensor(x, device=dev)), sf.tensor(y, device=dev))
        m.zero_grad()
        loss.backward()
        losses.append(loss.item())
        ps.push()
    ps.pull()
    for p in m.parameters():  # the pulled values were written on the parameters' device
        assert p.device.type == dev, p.device
    final = [p.detach().cpu().numpy().tolist() for p in m.parameters()]
    ps.close()
    print("RESULT", json.dumps({"losses": losses, "params": final}), flush=True)
"""


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _start(cfg):
    # the repository root on the path: the roles import this worktree's shardflow and tests.doubles
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-u", "-c", ROLE, json.dumps(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path})


def _run(device, workers=2, servers=2):
    srv = [_start({"role": "server", "id": i, "workers": workers}) for i in range(servers)]
    addrs = []
    for p in srv:
        line = p.stdout.readline().split()
        assert line and line[0] == "PORT", (line, p.stderr.read() if p.poll() is not None else "")
        addrs.append(["127.0.0.1", int(line[1])])
    wk = [_start({"role": "worker", "id": w, "servers": addrs, "device": device}) for w in range(workers)]
    outs = [p.communicate(timeout=60) for p in wk]
    for p in srv:
        p.communicate(timeout=30)
    results = []
    for p, (out, err) in zip(wk, outs):
        assert p.returncode == 0, (device, out, err)
        line = [x for x in out.splitlines() if x.startswith("RESULT ")]
        assert line, (device, out, err)
        results.append(json.loads(line[0][7:]))
    return results


def test_cuda_workers_train_as_cpu_workers():
    cpu, cuda = _run("cpu"), _run("cuda")
    for w, (a, b) in enumerate(zip(cuda, cpu)):
        np.testing.assert_allclose(a["losses"], b["losses"], rtol=1e-6, atol=1e-7, err_msg=f"worker {w}")
        for x, y in zip(a["params"], b["params"]):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7, err_msg=f"worker {w}")
    assert cpu[0]["params"] == cpu[1]["params"]  # sync: both workers end on the servers' values
    assert cpu[0]["losses"][-1] != cpu[0]["losses"][0]  # the servers did update (Adam)
