# ruff: noqa: I001, E402, E203, E231, A001, UP006, UP035, E401  (the tutorial's own style and imports, kept)
# pytorch/tutorials intermediate_source/fx_profiling_tutorial.py at commit
# 2dac3e41051684b8a9ad78263220c053bf35f5b2 (BSD-3-Clause), "(beta) Building a Simple CPU
# Performance Profiler with FX" by James Reed: ResNet18 traced with ``torch.fx.symbolic_trace``
# and its graph printed; a ``ProfilingInterpreter(torch.fx.Interpreter)`` that traces in its
# constructor and overrides ``run`` (total time) and ``run_node`` (time per node, keyed by
# ``torch.fx.Node``), then a ``summary`` table through ``tabulate``. Changes, and only these:
# torchvision's resnet18 and the tabulate package are the stand-ins of ``_standins.py``
# (torchvision's layout at 1/16 width with seeded weights; tabulate's default layout); the
# input of 5 x 3 x 224 x 224 became 2 x 3 x 32 x 32; the tutorial's long comment blocks are
# shortened.
"""
(beta) Building a Simple CPU Performance Profiler with FX
*******************************************************
**Author**: `James Reed <https://github.com/jamesr66a>`_

Capture PyTorch code with FX, and build a small "profiler" that collects runtime statistics
about each part of the model from actual runs.
"""

import torch
import torch.fx
import torchvision.models as models

rn18 = models.resnet18()
rn18.eval()

input = torch.randn(2, 3, 32, 32)
output = rn18(input)

import statistics, tabulate, time
from typing import Any, Dict, List
from torch.fx import Interpreter

######################################################################
# Capturing the Model with Symbolic Tracing

traced_rn18 = torch.fx.symbolic_trace(rn18)
print(traced_rn18.graph)


######################################################################
# Creating a Profiling Interpreter

class ProfilingInterpreter(Interpreter):
    def __init__(self, mod : torch.nn.Module):
        gm = torch.fx.symbolic_trace(mod)
        super().__init__(gm)

        self.total_runtime_sec : List[float] = []
        self.runtimes_sec : Dict[torch.fx.Node, List[float]] = {}

    def run(self, *args) -> Any:
        # Record the time we started running the model
        t_start = time.time()
        # Run the model by delegating back into Interpreter.run()
        return_val = super().run(*args)
        # Record the time we finished running the model
        t_end = time.time()
        self.total_runtime_sec.append(t_end - t_start)
        return return_val

    def run_node(self, n : torch.fx.Node) -> Any:
        # Record the time we started running the op
        t_start = time.time()
        # Run the op by delegating back into Interpreter.run_node()
        return_val = super().run_node(n)
        # Record the time we finished running the op
        t_end = time.time()
        self.runtimes_sec.setdefault(n, [])
        self.runtimes_sec[n].append(t_end - t_start)
        return return_val

    def summary(self, should_sort : bool = False) -> str:
        node_summaries : List[List[Any]] = []
        mean_total_runtime = statistics.mean(self.total_runtime_sec)

        for node, runtimes in self.runtimes_sec.items():
            mean_runtime = statistics.mean(runtimes)
            pct_total = mean_runtime / mean_total_runtime * 100
            node_summaries.append(
                [node.op, str(node), mean_runtime, pct_total])

        if should_sort:
            node_summaries.sort(key=lambda s: s[2], reverse=True)

        headers : List[str] = [
            'Op type', 'Op', 'Average runtime (s)', 'Pct total runtime'
        ]
        return tabulate.tabulate(node_summaries, headers=headers)

######################################################################
# Investigating the Performance of ResNet18

interp = ProfilingInterpreter(rn18)
interp.run(input)
print(interp.summary(True))
