#!/bin/bash
# Kernel-time profile of shardflow's GPT 12L and GPT-mini steps on the GPU through torch.profiler
# (CUPTI records CuPy's kernels too), beside torch's own step. One device call, about 40 s:
# `bash scripts/gpu_kernel_profile.sh` (writes $OUT/kprof.txt).
set -o pipefail; export PYTHONUNBUFFERED=1
PY=python3; export PYTHONPATH=$PWD
timeout 150 $PY - 2>&1 <<'PYEOF' | tee $OUT/kprof.txt
import numpy as np, torch, time
import shardflow as sf
from shardflow.bench.workloads import WORKLOADS
from shardflow.bench.engine import _copy_weights, _step_fn
from torch.profiler import profile, ProfilerActivity
for key in ("gpt-l", "gpt"):
    wl = WORKLOADS[key]
    torch.manual_seed(0)
    tm = wl.build(torch); sm = wl.build(sf); _copy_weights(tm, sm, sf)
    x, y = wl.make_batch(np.random.default_rng(0))
    tm = tm.to("cuda"); sm = sm.to("cuda")
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    sx, sy = sf.from_numpy(x).to("cuda"), sf.from_numpy(y).to("cuda")
    for lib, m, a, b, name in ((sf, sm, sx, sy, "shardflow"), (torch, tm, tx, ty, "torch")):
        step = _step_fn(lib, wl, m, wl.make_optimizer(lib, m), a, b)
        for _ in range(3): step()
        torch.cuda.synchronize(); sf.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(2): step()
            torch.cuda.synchronize(); sf.cuda.synchronize()
        ev = prof.key_averages()
        gpu = sum(e.device_time_total for e in ev if e.device_type.name == "CUDA") / 2 / 1e3
        print(f"\n===== {key} {name}: GPU kernel time per step {gpu:.1f} ms")
        print(ev.table(sort_by="device_time_total", row_limit=28, max_name_column_width=70))
PYEOF
