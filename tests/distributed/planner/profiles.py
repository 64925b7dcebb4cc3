"""Synthetic profiles for the planner's tests: round numbers, so that costs can be computed
by hand. Not a measurement of anything."""

from shardflow.distributed.planner.profile import SCHEMA, Profile

GRID = [16, 65536]


def measured(gflops=100.0, gbs=10.0, overhead_us=0.0, alpha=0.0, beta_per_gb=0.0, overlap=0.0,
             adamw_ns=1.0, global_us=0.0, cores=64, concs=(1, 2, 4)) -> Profile:
    """A "measured" profile with one GEMM rate everywhere, one bandwidth for every family,
    and collectives ``alpha + beta * bytes`` for every kind and group size 2 and 4."""
    comp = {
        "gemm": {"grid": GRID, "gflops": [[[gflops] * 2] * 2] * 2},
        "attention": {"fwd_gflops": gflops, "bwd_gflops": gflops},
        "conv": {"fwd_gflops": gflops, "bwd_gflops": gflops},
        "bandwidth_gbs": {"elementwise": {"elems": [1, 1 << 30], "fwd": [gbs, gbs], "bwd": [gbs, gbs]}},
        "optimizer_ns": {"adamw": adamw_ns, "sgd": adamw_ns / 4, "sgd_momentum": adamw_ns / 2},
        "overhead_us": {"op_fwd": overhead_us, "op_bwd": overhead_us, "global_op_fwd": global_us,
                        "global_op_bwd": global_us, "step": 0.0},
    }
    kinds = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "send_recv")
    coll = {str(w): {k: {str(g): [alpha, beta_per_gb * 1e-9] for g in (2, 4) if g <= w} for k in kinds}
            for w in (2, 4)}
    return Profile({"schema": SCHEMA, "name": "synthetic", "kind": "measured", "source": "tests",
                    "cores": cores, "compute": {str(c): comp for c in concs}, "collectives": coll,
                    "overlap": {"2": overlap, "4": overlap}})


def realistic() -> Profile:
    """Orders of magnitude of a small CPU host: 50 GFLOP/s GEMMs, 5 GB/s memory-bound ops,
    20 us per op, all-reduce 20 us + 5 GB/s."""
    return measured(gflops=50.0, gbs=5.0, overhead_us=20.0, alpha=20e-6, beta_per_gb=1 / 5.0,
                    overlap=0.5, adamw_ns=2.0, global_us=30.0)
