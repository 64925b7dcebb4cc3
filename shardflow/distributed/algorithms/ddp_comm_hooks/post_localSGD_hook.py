"""PyTorch's ``post_localSGD_hook`` with ``PostLocalSGDState``: the DDP half of post-local
SGD (its other half, averaging parameters after the optimizer step, is
``model_averaging.averagers.PeriodicModelAverager`` / ``optim.PostLocalSGDOptimizer``).

Per bucket: until ``start_localSGD_iter`` iterations have passed (an iteration ends at the
last bucket), the plain average over ``process_group`` (None: the world), as
``allreduce_hook``; afterwards the average over ``subgroup`` (None: the ranks of this host,
made once with ``new_subgroups()``, which like torch's needs CUDA to know the host's size), or
no communication at all with ``post_local_gradient_allreduce=False``.
"""

from __future__ import annotations

import logging

from ... import new_subgroups
from .default_hooks import allreduce_hook
from .future import Future

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]

logger = logging.getLogger(__name__)


class PostLocalSGDState:
    """torch's state: ``process_group``, ``subgroup``, ``start_localSGD_iter``,
    ``post_local_gradient_allreduce`` and the iteration count ``iter``."""

    __slots__ = ["process_group", "subgroup", "start_localSGD_iter",
                 "post_local_gradient_allreduce", "iter"]

    def __init__(self, process_group, subgroup, start_localSGD_iter,  # noqa: N803
                 post_local_gradient_allreduce=True):
        logger.info("Local SGD will be started after %s iterations", start_localSGD_iter)
        self.process_group = process_group
        self.subgroup = subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket) -> None:
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state: PostLocalSGDState, bucket) -> Future:  # noqa: N802
    """Average globally before ``start_localSGD_iter``, within ``subgroup`` after (module
    docstring)."""
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_hook(state.process_group, bucket)
    if not state.post_local_gradient_allreduce:
        return Future.completed(bucket.buffer().array)
    if state.subgroup is None:
        state.subgroup, _ = new_subgroups()
    return allreduce_hook(state.subgroup, bucket)
