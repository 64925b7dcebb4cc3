"""Pipeline parallelism on ``device="cuda"`` in real ranks, without a GPU: every rank installs
CuPy's host stand-in and the fake NCCL, which carries NCCL's calls over MPI on the host memory
behind the pointers (``tests.doubles.host_cuda.install()``). The stages' activations and gradients are device arrays sent over the
NCCL communicator's send/recv (only the small shape headers travel over MPI as host arrays),
and the run must train exactly like one process on the CPU.
"""

import numpy as np
import pytest

from shardflow.cli.train import main
from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

STAGE_SCRIPT = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.comm import world
from shardflow.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

dist.init_process_group("nccl")
r, W = dist.get_rank(), dist.get_world_size()
sf.manual_seed(3)
ref = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))
sf.manual_seed(3)
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))
model.to("cuda")
mods = list(model)
part = nn.Sequential(*(mods[:2] if r == 0 else mods[2:]))
g = np.random.default_rng(0)
x, y = g.standard_normal((8, 6)).astype(np.float32), g.standard_normal((8, 3)).astype(np.float32)
F.mse_loss(ref(sf.tensor(x)), sf.tensor(y)).backward()
for Sched in (Schedule1F1B, ScheduleGPipe):
    for p in part.parameters():
        p.grad = None
    stage = PipelineStage(part, r, W, group=world.get_world())
    sched = Sched(stage, 4, loss_fn=F.mse_loss)
    if r == 0:
        assert sched.step(sf.tensor(x, device="cuda")) is None
    else:
        out = sched.step(target=sf.tensor(y, device="cuda"))
        assert out.device.type == "cuda"
        np.testing.assert_allclose(out.detach().cpu().numpy(), ref(sf.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    refs = list(ref.parameters())[:2] if r == 0 else list(ref.parameters())[2:]
    for p, q in zip(part.parameters(), refs):
        assert p.grad.device.type == "cuda", Sched
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
calls = cuda_api.calls
# every micro-batch's activation and gradient went through NCCL: 16 messages, in groups (one
# per timeline step, counted once by the fake) of at most a send and a receive
assert calls >= 2 * 4, calls
print(f"rank {r}: ok, {calls} NCCL calls")
"""


def test_pipeline_stages_on_host_cuda_send_device_arrays_over_nccl():
    res = run_mpi(STAGE_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output


TRAIN_SCRIPT = r"""
import sys
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
from shardflow.cli.train import main
code = main(sys.argv[1:])
calls = cuda_api.calls
assert calls > 0, calls
print(f"NCCL calls: {calls}")
sys.exit(code)
"""

# 2 layers (1 per stage), a small --grad-clip so that the global norm across stages is used,
# and checkpoints (the whole model and optimizer state gathered from the stages)
FLAGS = ["--max-steps", "3", "--n-layer", "2", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "2", "--log-interval", "1",
         "--ckpt-interval", "3", "--sample-tokens", "5", "--no-progress", "--num-workers", "0",
         "--max-corpus-bytes", "20000", "--warmup-steps", "0", "--lr", "1e-2", "--grad-clip", "0.5"]


def _losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return [float(r[1]) for r in rows if r[1]], [float(r[2]) for r in rows if r[2]]


@pytest.mark.parametrize("n, layout", [(2, ["--pp", "2"]), (4, ["--pp", "2", "--dp", "2"]),
                                      (4, ["--pp", "2", "--tp", "2"])],
                         ids=["pp2", "pp2dp2", "pp2tp2"])
def test_train_gpt_pp_on_host_cuda_equals_one_cpu_process(tmp_path, capsys, n, layout):
    import shardflow as sf

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    pp, one = tmp_path / "pp", tmp_path / "one"
    res = run_mpi(TRAIN_SCRIPT, n=n, timeout=300,
                  args=["gpt", "--device", "cuda", *layout, "--data", str(corpus), "--out", str(pp),
                        *FLAGS]).check()
    assert "NCCL calls" in res.output and "--- sample" in res.output
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    capsys.readouterr()
    (t2, v2), (t1, v1) = _losses(pp / "metrics.csv"), _losses(one / "metrics.csv")
    assert len(t2) == 3 and len(v2) == 3
    np.testing.assert_allclose(t2, t1, rtol=0, atol=5e-5)
    np.testing.assert_allclose(v2, v1, rtol=0, atol=5e-5)
    s2, s1 = sf.load(pp / "ckpt_0000003.safetensors"), sf.load(one / "ckpt_0000003.safetensors")
    assert sorted(s2["model"]) == sorted(s1["model"])
    for k in s1["model"]:  # every stage's parameters, gathered
        np.testing.assert_allclose(s2["model"][k].numpy(), s1["model"][k].numpy(), atol=1e-4, err_msg=k)
    o2, o1 = s2["optimizer"]["state"], s1["optimizer"]["state"]
    assert sorted(o2) == sorted(o1)
    for i in o1:  # and every parameter's AdamW state
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(o2[i][key].numpy(), o1[i][key].numpy(), atol=1e-5, err_msg=f"{i} {key}")


INTERLEAVED_SCRIPT = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.comm import world
from shardflow.distributed.pipelining import PipelineStage, ScheduleInterleaved1F1B

dist.init_process_group("nccl")
r, W = dist.get_rank(), dist.get_world_size()
H = 1024  # 4 rows x 1024 float32 = 16 kB per activation: above MPI's eager limit, so the fake
          # NCCL's send waits for its receive, as NCCL's may
def build():
    sf.manual_seed(5)
    return [nn.Linear(8, H), nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, 3)]
ref = build()
g = np.random.default_rng(1)
x, y = g.standard_normal((16, 8)).astype(np.float32), g.standard_normal((16, 3)).astype(np.float32)
h = sf.tensor(x)
for mod in ref:
    h = mod(h).tanh() if mod is not ref[-1] else mod(h)
F.mse_loss(h, sf.tensor(y)).backward()

class Block(nn.Module):
    def __init__(self, lin, last):
        super().__init__()
        self.lin, self.last = lin, last
    def forward(self, t):
        return self.lin(t) if self.last else self.lin(t).tanh()

mods = [Block(m, i == 3).to("cuda") for i, m in enumerate(build())]
mine = [k * W + r for k in range(2)]
stages = [PipelineStage(mods[s], s, 2 * W, group=world.get_world()) for s in mine]
sched = ScheduleInterleaved1F1B(stages, 4, loss_fn=F.mse_loss)
if r == 0:
    assert sched.step(sf.tensor(x, device="cuda")) is None
else:
    out = sched.step(target=sf.tensor(y, device="cuda"))
    assert out.device.type == "cuda"
    np.testing.assert_allclose(out.detach().cpu().numpy(), h.detach().numpy(), rtol=1e-4, atol=1e-5)
for s in mine:
    for p, q in zip(mods[s].parameters(), ref[s].parameters()):
        assert p.grad.device.type == "cuda"
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
calls = cuda_api.calls
assert calls >= 3 * 4, calls  # 3 boundaries x 4 micro-batches each way, grouped per step
print(f"rank {r}: ok, {calls} NCCL calls")
"""


def test_interleaved_1f1b_on_host_cuda_with_large_activations_does_not_deadlock():
    """Interleaved 1F1B (2 stages per rank) with activations above MPI's eager limit: each
    timeline step's sends and receives are one NCCL group, so no rank's send waits on a peer
    that is itself sending; outputs and gradients equal one CPU process."""
    res = run_mpi(INTERLEAVED_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output
