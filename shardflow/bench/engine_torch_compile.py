"""The torch.compile peer of ``shardflow bench engine``: PyTorch's own train step with its
forward+loss and its optimizer step each compiled by ``torch.compile`` (default backend,
inductor: generated C++/OpenMP kernels on CPU, Triton on CUDA).

What is compiled, and why this way (the pattern of PyTorch's tutorials): the loss function
``model(x) -> loss`` goes through dynamo, and AOTAutograd compiles its backward as a second
graph, so ``loss.backward()`` runs compiled code; ``optimizer.step()`` is wrapped in its own
``torch.compile``d function (inductor fuses the per-parameter updates into a few kernels).
``zero_grad(set_to_none=True)`` stays eager (it only drops references). Compiling the whole
step with ``backward()`` inside would graph-break at ``backward`` without compiled autograd,
which would measure dynamo's fallback rather than the compiler.

The model is a deep copy of the PyTorch model it is given (same initial weights as every
other column, trained independently). Compilation happens lazily on the first calls; the
optimizer graph is traced again on the second step, once its state exists, so the benchmark
counts every warm-up step's excess over the steady step as compile cost.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

NAME = "torch.compile"


def available(torch) -> tuple[bool, str]:
    """(True, backend) when ``torch.compile`` exists in this torch, else (False, why)."""
    if not hasattr(torch, "compile"):
        return False, f"torch {torch.__version__} has no torch.compile (needs torch >= 2.0)"
    return True, "inductor"


def make_step(torch, wl, torch_model, x, y, backend: str = "inductor") -> Callable[[], Any]:
    """A no-argument callable running one train step of workload ``wl`` on a compiled copy of
    ``torch_model`` (x, y: the batch as torch tensors on the model's device); returns the
    loss tensor. Compile errors surface on the first call, as torch.compile's do."""
    model = copy.deepcopy(torch_model)
    opt = wl.make_optimizer(torch, model)
    loss_fn = torch.compile(lambda x, y: wl.loss(torch, model, x, y), backend=backend)

    @torch.compile(backend=backend, fullgraph=False)
    def opt_step():
        opt.step()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(x, y)
        loss.backward()
        opt_step()
        return loss

    return step
