"""``torch._dynamo.explain(fn)(*args)``: what compiling ``fn`` for these arguments produced.

shardflow's tracer records one graph per call signature and never splits it (no bytecode,
so no graph breaks): a call the tracer cannot record runs eagerly instead, and that reason is
reported as the break reason. ``op_count`` counts the recorded op calls (before fusion, as
Dynamo counts the FX graph's call nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..jit import compile as _compile


@dataclass
class ExplainOutput:
    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list = field(default_factory=list)
    out_guards: list = field(default_factory=list)
    compile_times: str = ""

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}:\n    Reason: {r}" for i, r in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}:")
            lines += [f"    {op}" for op in ops]
        lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines) + "\n"


def explain(fn, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs)`` compiles ``fn``, runs it once and reports (torch's
    two-step form; the deprecated one-step ``explain(fn, *args)`` is refused as torch 2.13)."""
    if extra_args or extra_kwargs:
        raise TypeError("explain(f, *args, **kwargs) is no longer supported: call "
                        "explain(f)(*args, **kwargs)")

    def run(*args, **kwargs) -> ExplainOutput:
        compiled = _compile(fn)
        if not hasattr(compiled, "cache"):  # a Module: its CompiledFunction
            compiled = compiled._compiled
        compiled(*args, **kwargs)
        out = ExplainOutput(compile_times=f"{compiled.stats['compile_s']:.4f} s")
        for entry in compiled.cache.values():
            if entry.graph is None:
                out.break_reasons.append(entry.reason)
                continue
            ops = []
            for n in entry.graph.nodes:  # a fused node names its members ("add, relu")
                if n.kind == "call":
                    ops.append(n.name or getattr(n.target, "__name__", str(n.target)))
                elif n.kind == "fused":
                    ops += n.name.split(", ")
            out.graphs.append(entry.graph)
            out.ops_per_graph.append(ops)
        if kwargs:
            out.break_reasons.append("keyword arguments are not compiled")
        out.graph_count = len(out.graphs)
        out.op_count = sum(len(ops) for ops in out.ops_per_graph)
        return out

    return run
