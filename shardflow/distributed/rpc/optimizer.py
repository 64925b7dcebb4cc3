"""``DistributedOptimizer`` (``torch.distributed.optim.DistributedOptimizer``): one local
optimizer per worker that owns some of the parameters, stepped there with the gradients
of a distributed autograd context.

Communication plan: the constructor groups the parameter RRefs by owner and, with one
``rpc_async`` per owner, creates a ``_LocalOptimizer`` there (``optimizer_class`` over the
owner's local parameters, built from the RRefs' local values); each answers with an RRef
to it. ``step(context_id)`` sends one ``rpc_async`` per owner and waits for all: the owner
sets each parameter's ``.grad`` to its gradient in that context and steps its optimizer,
under the lock that distributed autograd's local passes hold while they borrow ``.grad``
(``dist_autograd.GRAD_LOCK``: a step never lands inside another context's pass), as
PyTorch's lock shared by the local optimizers of the process (and, as there, a parameter
without a gradient in the context keeps its former ``.grad``).
"""

from __future__ import annotations

from collections import defaultdict

from ...futures import wait_all
from . import api
from . import dist_autograd as DA
from .rref import RRef

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    global_lock = DA.GRAD_LOCK

    def __init__(self, optim_cls, local_params_rref, *args, **kwargs):
        self._local_params = [rref.local_value() for rref in local_params_rref]
        self.optim = optim_cls(self._local_params, *args, **kwargs)

    def step(self, autograd_ctx_id: int) -> None:
        all_local_grads = DA.get_gradients(autograd_ctx_id)
        with _LocalOptimizer.global_lock:
            for param, grad in all_local_grads.items():
                param.grad = grad
            self.optim.step()


def _new_local_optimizer(optim_cls, local_params_rref, *args, **kwargs):
    return RRef(_LocalOptimizer(optim_cls, local_params_rref, *args, **kwargs))


def _local_optimizer_step(local_optim_rref, autograd_ctx_id):
    local_optim_rref.local_value().step(autograd_ctx_id)


class DistributedOptimizer:
    """``DistributedOptimizer(optimizer_class, params_rref, *args, **kwargs)``: ``args`` and
    ``kwargs`` go to ``optimizer_class`` on each owner (see the module docstring)."""

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        per_worker = defaultdict(list)
        for param in params_rref:
            if not getattr(type(param), "_shardflow_rref", False):
                raise TypeError(
                    f"DistributedOptimizer expects RRefs to parameters, got {type(param).__name__}; "
                    "wrap local parameters with rpc.RRef(p) (remote ones come from the owner)")
            per_worker[param.owner()].append(param)
        futs = [api.rpc_async(worker, _new_local_optimizer, args=(optimizer_class, rrefs, *args),
                              kwargs=kwargs) for worker, rrefs in per_worker.items()]
        self.remote_optimizers = wait_all(futs)

    def step(self, context_id: int) -> None:
        """Step every owner's optimizer with the gradients of ``context_id``."""
        DA._container().get(context_id)  # a clear error for a released or unknown context
        wait_all([api.rpc_async(opt.owner(), _local_optimizer_step, args=(opt, context_id))
                  for opt in self.remote_optimizers])
