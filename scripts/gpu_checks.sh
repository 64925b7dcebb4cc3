#!/bin/bash
# The GPU session's checks in one device call (docs/GPU.md): run from the repository root with
# the MPI wheels in .whl (carry .whl). MPI wheels go into a venv over the image's packages (a .pth
# file appends the image's site-packages, so its CuPy and torch are seen and the wheels' mpi4py
# and mpiexec come first). Writes logs, JSON and a cProfile under $OUT.
# Order: versions, tests/gpu, engine bench vs PyTorch CUDA eager, a cProfile of the GPT-mini step,
# the bench with torch.compile. About 250 s on an H200 (torch.compile compiles take 110 s of it).
set -o pipefail; export PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m venv --system-site-packages /tmp/venv && /tmp/venv/bin/python -m pip install -q --no-index --no-deps --no-compile .whl/*.whl || echo "WHEEL INSTALL FAILED"
python3 -c "import site; print(site.getsitepackages()[0])" > $(/tmp/venv/bin/python -c "import site; print(site.getsitepackages()[0])")/image_site.pth
PY=/tmp/venv/bin/python; export PYTHONPATH=$PWD
ls /tmp/venv/bin | tr '\n' ' '; echo
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
$PY -c "import sys, cupy, numpy, torch; from cupy.cuda import nccl; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__, 'nccl', nccl.get_version())" 2>&1 | tee $OUT/versions.txt
$PY -c "import mpi4py; from mpi4py import MPI; print('mpi4py', mpi4py.__version__, MPI.Get_library_version()[:40])" 2>&1 | tee -a $OUT/versions.txt
echo "== [$(( $(date +%s) - t0 ))s] tests/gpu"
SHARDFLOW_KERNELS=numpy timeout 150 $PY -m pytest tests/gpu -q -n 8 --tb=short -rf -p no:cacheprovider -o addopts="" --timeout 120 --junitxml=$OUT/gpu.xml > $OUT/gpu.log 2>&1
echo "pytest rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed|REFUSED|OK " $OUT/gpu.log | head -40
echo "== [$(( $(date +%s) - t0 ))s] engine bench, eager vs PyTorch CUDA eager"
timeout 150 $PY -m shardflow bench engine --device cuda --runs 7 --models mlp,cnn,gpt,gpt-l --json $OUT/engine.json 2>&1 | tee $OUT/bench.log
echo "== [$(( $(date +%s) - t0 ))s] cProfile of shardflow GPT-mini step on cuda"
timeout 60 $PY - > $OUT/profile.txt 2>&1 <<'PYEOF'
import cProfile, pstats
from shardflow.bench.engine import bench_workload
bench_workload("gpt", runs=1, steps=1, warmup=2, device="cuda")
pr = cProfile.Profile(); pr.enable()
bench_workload("gpt", runs=3, steps=2, warmup=1, device="cuda")
pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(35)
PYEOF
echo "== [$(( $(date +%s) - t0 ))s] engine bench with torch.compile"
timeout 150 $PY -m shardflow bench engine --device cuda --runs 5 --compile --models mlp,cnn,gpt,gpt-l --no-small-op --json $OUT/engine_compile.json 2>&1 | grep -v Warn | tee $OUT/bench_compile.log
echo "== [$(( $(date +%s) - t0 ))s] done"
