"""``copy.deepcopy`` of a Tensor, as torch's ``Tensor.__deepcopy__``.

RL code copies networks with ``copy.deepcopy`` (sfujim/TD3's target networks, a DQN's
target net refreshed by ``deepcopy(policy_net)`` after training), and some code deep-copies
tensors it keeps in dicts. torch's rules, kept here:

* only a graph leaf can be copied: a tensor made by a differentiable op raises torch's
  RuntimeError (copying it would cut it from its graph silently);
* the copy is a new leaf with its own memory, on the same device, with the same dtype,
  ``requires_grad``, ``.grad`` (deep-copied too) and Python attributes (``t.foo = 3``
  survives), of the same class;
* a ``Parameter``'s copy has no ``.grad`` (``Parameter.__deepcopy__`` builds a fresh
  Parameter from the data), so a deep-copied trained module starts with ``grad=None``.

Before, a Tensor was copied through pickling (``__reduce_ex__``): its ``.grad`` and
attributes were lost, a device tensor came back on the CPU and a non-leaf was copied without
complaint; a Parameter kept its ``.grad``.
"""

from __future__ import annotations

import copy

_NOT_A_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
    "at the moment.  If you were attempting to deepcopy a module, this may be because of a "
    "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
)


# per-tensor records that describe the original's memory or mode, not its value: the copy
# owns fresh memory (not a view of a base, not an inference-mode tensor)
_NOT_COPIED = frozenset({"_base", "_untyped_storage", "_sf_inference"})


def deepcopy_tensor(t, memo: dict):
    """A deep copy of the local tensor ``t`` (see the module docstring); ``memo`` is
    ``copy.deepcopy``'s, so a tensor reached twice is copied once."""
    from .tensor import _wrap

    if id(t) in memo:
        return memo[id(t)]
    if t.grad_fn is not None:
        raise RuntimeError(_NOT_A_LEAF)
    out = _wrap(t.array.copy(), requires_grad=t.requires_grad)
    if type(t) is not type(out):
        out.__class__ = type(t)  # a Tensor subclass without slots of its own (same layout)
    memo[id(t)] = out
    if t.grad is not None:
        out.grad = deepcopy_tensor(t.grad, memo)
    for k, v in t.__dict__.items():
        if k not in _NOT_COPIED:
            out.__dict__[k] = copy.deepcopy(v, memo)
    return out
