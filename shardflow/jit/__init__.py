"""``shardflow.compile``: trace -> graph IR -> passes -> executor (layer L6).

| file | what |
|---|---|
| ``graph.py`` | the IR: ``Graph`` of ``Node``s (input, const, call, fused, dead) and ``Ref``s |
| ``trace.py`` | records the outermost op calls of one eager run through the dispatcher hook |
| ``passes.py`` | dead-code elimination, common subexpressions, elementwise fusion |
| ``codegen.py`` | generates one Numba kernel per fused elementwise group |
| ``executor.py`` | replays a graph without the autograd tape |
| ``api.py`` | ``compile`` (torch.compile's signature), guards, retrace, eager fallback, log |

Forward graphs: inference calls get every pass (fusion included); training forwards replay
with the autograd tape and no fusion; backward and optimizer steps are not compiled. See
docs/KERNELS.md.
"""

from .api import CompiledFunction, OptimizedModule, compile

__all__ = ["compile", "CompiledFunction", "OptimizedModule"]
