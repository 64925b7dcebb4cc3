"""``AdaptiveLogSoftmaxWithLoss`` (``torch.nn.modules.adaptive``): the adaptive softmax of
Grave et al., "Efficient softmax approximation for GPUs".

Classes are split by ``cutoffs`` into a shortlist (``[0, cutoffs[0])``, scored by the ``head``
directly) and clusters (``[cutoffs[i], cutoffs[i+1])``); the head also scores one logit per
cluster, and cluster ``i`` has its own two-layer projection ``tail[i]`` (``in_features ->
in_features // div_value**(i+1) -> cluster size``). ``log p(c) = head_logprob[c]`` for a
shortlist class, ``head_logprob[shortlist + i] + tail_i_logprob[c - cutoffs[i]]`` for a class
of cluster ``i``. ``forward(input, target)`` returns ``(output, loss)``: each target's log
probability and the mean negative. Torch's parameter layout (``head.weight``,
``tail.<i>.0.weight``, ``tail.<i>.1.weight``), so state dicts load either way.

How this differs from torch's code (not in results): torch runs each tail on its cluster's
rows only and writes the results with in-place ``index_copy_``; here each tail runs on every
row and a 0/1 row mask keeps its cluster's rows (row-wise ops, so the kept values are the
same), which keeps the computation out-of-place for the autograd tape.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from ...autograd import Tensor
from ...backend import get_array_module
from ...ops.elementwise import where
from ...ops.reduce import argmax
from ...ops.shape import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _host(t: Tensor) -> np.ndarray:
    a = t.array
    return a.get() if hasattr(a, "get") else np.asarray(a)


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // div_value ** (i + 1))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                                        Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check(self, input: Tensor, target: Tensor) -> None:
        if target.dim() == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input.size()}")
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        self._check(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)  # (B, in_features)
        target = _host(target_).reshape(-1).astype(np.int64)  # (B,)
        if target.size and (target.min() < 0 or target.max() > self.n_classes - 1):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min()}, {target.max()}] were found. ")
        if str(target_.dtype).rsplit(".", 1)[-1] not in ("int32", "int64"):
            # torch gathers with an index of the target's dtype (target.new_empty): a float,
            # bool or narrower int target fails there; shardflow computed a loss from it
            raise RuntimeError("gather(): Expected dtype int32/int64 for index")
        xp = get_array_module(input.array)
        head_index = np.where(target < self.shortlist_size, target, 0)  # (B,) the head column each row reads
        output = None
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            rows = (target >= low) & (target < high)
            if not rows.any():
                continue
            head_index[rows] = self.shortlist_size + i
            relative = Tensor(xp.asarray(np.where(rows, target - low, 0)[:, None]))  # (B, 1)
            local = F.log_softmax(self.tail[i](input), dim=1).gather(1, relative).squeeze(1)  # (B,)
            part = local * Tensor(xp.asarray(rows.astype(_host(local).dtype)))
            output = part if output is None else output + part
        head_logprob = F.log_softmax(self.head(input), dim=1)  # (B, head_size)
        head_part = head_logprob.gather(1, Tensor(xp.asarray(head_index[:, None]))).squeeze(1)
        output = head_part if output is None else output + head_part
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)  # (B, head_size)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, dim=1)  # (B, n_classes)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log probabilities of every class, ``(B, n_classes)``."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class per row: the head's argmax when it is a shortlist class, else
        the argmax over all classes (torch's rule)."""
        head_output = self.head(input)
        output = argmax(head_output, dim=1)  # (B,)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any():
            return output
        full = argmax(self._get_full_log_prob(input, head_output), dim=1)
        return where(not_in_shortlist, full, output)
