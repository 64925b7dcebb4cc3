"""``shardflow bench engine --device cuda`` on a machine without a GPU: a message, no traceback.
(On a GPU, tests/gpu/test_bench_cuda.py runs it.)"""

import pytest

from shardflow.backend.xp import cuda_is_available
from shardflow.bench import engine


@pytest.mark.skipif(cuda_is_available(), reason="this machine has a GPU")
def test_cuda_bench_without_a_gpu_says_what_is_missing():
    with pytest.raises(SystemExit) as e:
        engine.main(["--device", "cuda", "--models", "mlp"])
    msg = str(e.value)
    assert "--device cuda" in msg and "no CUDA device" in msg and "drop --device" in msg


def test_gpu_workload_is_registered_with_its_flops():
    wl = engine.WORKLOADS["gpt-l"]
    # 12 blocks of 12 d^2 weights + the head, 3 x 2 FLOPs per weight per token, plus attention
    per_token = 12 * 12 * 768 * 768 + 256 * 768
    assert wl.flops_per_step == 3 * 2 * (per_token + 12 * 2 * 256 * 768) * 16 * 256
