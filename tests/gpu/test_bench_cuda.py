"""The engine benchmark on the GPU: both libraries run, synchronised, and report figures."""

from shardflow.bench.engine import bench_workload


def test_engine_bench_on_cuda_reports_both_libraries():
    row = bench_workload("mlp", runs=1, steps=1, warmup=1, device="cuda")
    assert row["device"] == "cuda"
    assert row["shardflow_ms"] > 0 and row["torch_ms"] > 0
    assert row["shardflow_peak_bytes"] > 0
