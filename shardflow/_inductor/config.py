"""``torch._inductor.config``: Inductor's settings, with PyTorch 2.13's names and defaults
(``compiler/config_module.py``), so that ``torch._inductor.config.coordinate_descent_tuning =
True`` or ``config.triton.cudagraphs = False`` run. They tune Inductor's generated kernels;
shardflow's compiler (trace, replay, fused elementwise kernels: docs/KERNELS.md) has none of
those choices, so the values are recorded only. An unknown name raises ``AttributeError``
as in PyTorch.
"""

from __future__ import annotations

import os

from ..compiler.config_module import ConfigModule, install

DEFAULTS = {
    "coordinate_descent_tuning": False, "coordinate_descent_check_all_directions": False,
    "fx_graph_cache": True, "fx_graph_remote_cache": None, "max_autotune": False,
    "max_autotune_gemm": False, "max_autotune_pointwise": False, "epilogue_fusion": True,
    "freezing": False, "layout_optimization": True, "aggressive_fusion": False, "shape_padding": True,
    "benchmark_kernel": False, "force_fuse_int_mm_with_mul": False, "use_mixed_mm": True,
    "fallback_random": False, "debug": False, "emulate_precision_casts": False, "cpp_wrapper": False,
    "autotune_in_subproc": False, "split_reductions": True, "worker_start_method": "subprocess",
    "unroll_reductions_threshold": 8, "max_fusion_size": 64,
    "compile_threads": min(32, os.cpu_count() or 1),  # as PyTorch on this machine
}

SUBCONFIGS = {
    "triton": ConfigModule("torch._inductor.config.triton", {
        "unique_kernel_names": True, "cudagraphs": False, "cudagraph_trees": True, "multi_kernel": 0,
        "cudagraph_skip_dynamic_graphs": False, "autotune_pointwise": True, "store_cubin": False}),
    "cpp": ConfigModule("torch._inductor.config.cpp", {
        "enable_kernel_profile": False, "simdlen": None, "threads": -1, "weight_prepack": True}),
    "trace": ConfigModule("torch._inductor.config.trace", {"enabled": False, "graph_diagram": False}),
}

install(__name__, ConfigModule("torch._inductor.config", DEFAULTS, SUBCONFIGS))
