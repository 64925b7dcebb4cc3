"""The first ``backward()`` of a plain ``python train.py`` applies ``backend.tune_allocator()``
(backend/memory.py): without it glibc serves each multi-megabyte temporary with a fresh
mmap and the step pays its page faults again every iteration (measured: 10% of a GPT-mini
step, 44% of the benchmark CNN's). ``SHARDFLOW_TUNE_ALLOCATOR=0`` opts out."""

import os
import subprocess
import sys

import pytest

# 5 steps of a 1024-wide MLP on a 256-row batch after 2 warm-up steps: minor page faults per
# step (the temporaries are 1 MiB each, above glibc's default 128 KiB mmap threshold)
PROBE = """
import resource
import shardflow as sf
model = sf.nn.Sequential(sf.nn.Linear(1024, 1024), sf.nn.ReLU(), sf.nn.Linear(1024, 1024))
opt = sf.optim.SGD(model.parameters(), lr=0.01)
x = sf.randn(256, 1024)
def step():
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()
for _ in range(2):
    step()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 5)
"""


def _faults_per_step(setting):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if setting is not None:
        env["SHARDFLOW_TUNE_ALLOCATOR"] = setting
    else:
        env.pop("SHARDFLOW_TUNE_ALLOCATOR", None)
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return float(r.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_first_backward_keeps_temporaries_in_the_heap():
    tuned, untuned = _faults_per_step(None), _faults_per_step("0")
    # untuned: about 2400 faults a step (each 1 MiB temporary touched afresh); tuned: ~0
    assert untuned > 500, untuned
    assert tuned < untuned / 10, (tuned, untuned)


def test_bad_setting_names_the_variable(monkeypatch):
    from shardflow import _config
    from shardflow.backend import memory

    monkeypatch.setenv("SHARDFLOW_TUNE_ALLOCATOR", "yes")
    with pytest.raises(Exception, match="SHARDFLOW_TUNE_ALLOCATOR must be 1 or 0, got 'yes'"):
        _config.tune_allocator_on_backward()
    monkeypatch.setattr(memory, "_tried", [False])
    with pytest.raises(Exception, match="SHARDFLOW_TUNE_ALLOCATOR"):
        memory.tune_on_first_use()
