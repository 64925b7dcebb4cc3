"""``shardflow.compile``: trace -> graph IR -> passes -> executor (layer L6).

| file | what |
|---|---|
| ``graph.py`` | the IR: ``Graph`` of ``Node``s (input, const, call, fused, dead) and ``Ref``s |
| ``trace.py`` | records the outermost op calls of one eager run through the dispatcher hook |
| ``passes.py`` | dead-code elimination, common subexpressions, elementwise fusion |
| ``codegen.py`` | generates one Numba kernel per fused elementwise group |
| ``executor.py`` | replays a graph without the autograd tape |
| ``api.py`` | ``compile`` (torch.compile's signature), guards, retrace, eager fallback, log |
| ``step.py`` | ``compile_step(model, optimizer, loss_fn)``: a whole training step, guards, check, fallback |
| ``step_plan.py`` | the step's replay plan: forward, backward from each op's vjp, optimizer, memory plan |
| ``torchscript.py`` | torch.jit's TorchScript names (``script``, ``trace``, ``ignore`` ...): pass-through, run eagerly |
| ``fusion_settings.py`` | torch.jit's ``optimized_execution``, ``fuser``, ``set_fusion_strategy``, ``Error``: checked, no effect |
| ``scripted.py`` | what ``script(module)`` / ``trace(module)`` return: the module run eagerly, printed as torch's |
| ``overlap.py`` | the plan's backward on 2 CPUs: weight-gradient GEMMs on a worker thread, BLAS threads |

Forward graphs (``compile``): inference calls get every pass (fusion included); training
forwards replay with the autograd tape, each fused group one ``FusedFunction`` with a
generated backward kernel. Training steps (``compile_step``): forward (fused), backward and
optimizer update replay as one flat plan without the tape across ops; parameter hooks (DDP's
bucket all-reduces) run in it.
See docs/KERNELS.md.
"""

from .api import CompiledFunction, OptimizedModule, compile
from .fusion_settings import Error, fuser, optimized_execution, set_fusion_strategy
from .step import CompiledStep, compile_step
from .torchscript import *  # noqa: F403 (after the submodules: ``trace`` is the function here, as in torch)
from .torchscript import __all__ as _torchscript_names

__all__ = ["compile", "CompiledFunction", "OptimizedModule", "compile_step", "CompiledStep", *_torchscript_names,
           "optimized_execution", "fuser", "set_fusion_strategy", "Error"]
