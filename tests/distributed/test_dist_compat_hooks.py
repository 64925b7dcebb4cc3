"""ddp_comm_hooks' DDPCommHookType / register_ddp_comm_hook against torch 2.13: each member
registers the hook of the same name with the same state (a recording model stands in for DDP
in both libraries); the ones shardflow lacks raise before registering. Registration on a real
2-rank DDP: tests/distributed/test_dist_compat.py."""

import numpy as np
import pytest

import shardflow.distributed.algorithms.ddp_comm_hooks as hooks

torch = pytest.importorskip("torch")
import torch.distributed.algorithms.ddp_comm_hooks as thooks  # noqa: E402


class Recorder:
    def __init__(self):
        self.calls = []

    def register_comm_hook(self, state, hook):
        self.calls.append((state, hook))


def _describe(call):
    state, hook = call
    if state is not None and hasattr(state, "matrix_approximation_rank"):
        state = ("PowerSGDState", state.process_group, state.matrix_approximation_rank,
                 state.start_powerSGD_iter)
    return state, hook.__name__


@pytest.mark.parametrize("name", list(thooks.DDPCommHookType.__members__))
def test_hook_types_register_torchs_hooks(name):
    group = object()
    if name.startswith(("BATCHED", "QUANTIZE")):
        model = Recorder()
        with pytest.raises(NotImplementedError, match=f"DDPCommHookType.{name}: shardflow has"):
            hooks.register_ddp_comm_hook(hooks.DDPCommHookType[name], model, group)
        assert model.calls == []
        return
    got = []
    for lib in (thooks, hooks):
        model = Recorder()
        lib.register_ddp_comm_hook(lib.DDPCommHookType[name], model, state=group)
        assert len(model.calls) == 1
        got.append(_describe(model.calls[0]))
    assert got[0] == got[1]


def test_noop_hook_and_module_aliases():
    class Bucket:
        def buffer(self):
            return self

        array = np.arange(3.0)

    assert hooks.debugging.noop_hook(None, Bucket()).wait() is Bucket.array
    assert hooks.default is hooks.default_hooks and hooks.powerSGD is hooks.powerSGD_hook
    with pytest.raises(TypeError, match="DDPCommHookType"):
        hooks.register_ddp_comm_hook("ALLREDUCE", Recorder())
