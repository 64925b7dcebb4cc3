"""Hook handle ids count every hook registration from one process-wide counter, as torch's
``RemovableHandle.next_id`` does: Module hooks, Tensor ``register_hook`` /
``register_post_accumulate_grad_hook`` and node ``register_hook`` / ``register_prehook``
(a pruned module's printed ``_forward_pre_hooks`` shows these ids)."""

import pytest
import torch

import shardflow as sf


def _ids(lib):
    ids = [lib.nn.Linear(2, 2).register_forward_hook(lambda *a: None).id]
    x = lib.ones(2, requires_grad=True)
    ids.append(x.register_hook(lambda g: g).id)
    ids.append(x.register_post_accumulate_grad_hook(lambda t: None).id)
    ids.append(lib.nn.Linear(2, 2).register_forward_pre_hook(lambda *a: None).id)
    y = x * 2
    ids.append(y.grad_fn.register_hook(lambda *a: None).id)
    ids.append(y.grad_fn.register_prehook(lambda *a: None).id)
    ids.append(y.register_hook(lambda g: g).id)
    return [i - ids[0] for i in ids]


def test_handle_ids_share_one_counter_like_torch():
    assert _ids(sf) == _ids(torch) == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("lib", [torch, sf])
def test_tensor_hook_handle_is_a_context_manager(lib):
    x = lib.ones(2, requires_grad=True)
    seen = []
    with x.register_hook(lambda g: seen.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert seen == [1]


def _handles(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    return [lib.nn.Linear(2, 2).register_forward_hook(lambda *a: None), x.register_hook(lambda g: g),
            x.register_post_accumulate_grad_hook(lambda t: None), y.grad_fn.register_hook(lambda *a: None),
            y.grad_fn.register_prehook(lambda *a: None)]


def test_every_hook_handle_is_a_removable_handle_like_torch():
    """A Tensor's and a node's hook handles are ``torch.utils.hooks.RemovableHandle``s as a
    Module's are (shardflow's were a separate class: ``isinstance`` said False)."""
    want = [isinstance(h, torch.utils.hooks.RemovableHandle) for h in _handles(torch)]
    got = [isinstance(h, sf.utils.hooks.RemovableHandle) for h in _handles(sf)]
    assert got == want == [True] * 5
    assert sf.utils.hooks.RemovableHandle is sf.nn.modules.module.RemovableHandle
