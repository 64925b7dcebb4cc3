"""A graph node for an op that has no derivative, as torch records one.

torch puts such ops in the autograd graph (their outputs ``requires_grad`` when an input
does, and carry a ``grad_fn``), so the error comes at ``backward``, naming the op. It has two
kinds, and :class:`NotDifferentiable` gives both:

* an op with a node of its own (``node="GeqrfBackward0"``): ``grad_fn.name()`` is that name
  and backward raises ``NotImplementedError("the derivative for 'geqrf' is not
  implemented.")``;
* the generic node (no ``node``): ``grad_fn.name()`` is ``'torch::autograd::NotImplemented'``
  (printed ``grad_fn=<NotImplemented>``) and backward raises ``RuntimeError("derivative for
  aten::<op> is not implemented")`` -- ``linalg_ldl_factor_ex``, ``linalg_ldl_solve``,
  ``histogram``.

shardflow's messages start with torch's words and then say what to do instead.
"""

from __future__ import annotations

from ..autograd import Function

NOT_IMPLEMENTED_NODE = "torch::autograd::NotImplemented"


class NotDifferentiable(Function):
    """The outputs of ``forward_fn(*arrays)`` as one node whose backward raises (module
    docstring). ``name`` is torch's op name (``aten::<name>`` for the generic node),
    ``instead`` a differentiable alternative for the message (optional), ``node`` the op's
    own node name when torch gives it one."""

    save_inputs = ()

    def torch_name(self) -> str:
        return self.__dict__.get("node") or NOT_IMPLEMENTED_NODE

    def forward(self, *arrays, forward_fn=None, name="", instead="", node=None):
        self.op_name, self.instead, self.node = name, instead, node
        return forward_fn(*arrays)

    def backward(self, *grads):
        fix = ("detach its input (torch has no derivative for it either)"
               + (f", or use the differentiable {self.instead}" if self.instead else ""))
        if self.node:
            raise NotImplementedError(f"the derivative for '{self.op_name}' is not implemented. To backward "
                                      f"through this graph, {fix}")
        raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented: to backward through "
                           f"this graph, {fix}")
