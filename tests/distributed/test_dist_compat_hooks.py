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
    if name.startswith("QUANTIZE"):
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


def test_post_local_sgd_hook_switches_after_start_iter():
    from shardflow.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as pls

    class Group:
        size = 2

        def __init__(self):
            self.reduced = []

        def all_reduce(self, buf, op, async_op=False):
            self.reduced.append(op)
            return type("W", (), {"wait": lambda self: None})()

    class Bucket:
        array = np.ones(3)

        def buffer(self):
            return self

        def is_last(self):
            return True

    world, sub = Group(), Group()
    state = pls.PostLocalSGDState(world, sub, start_localSGD_iter=2)
    for _ in range(4):
        pls.post_localSGD_hook(state, Bucket()).wait()
    assert (state.iter, len(world.reduced), len(sub.reduced)) == (2, 2, 2)
    quiet = pls.PostLocalSGDState(world, None, 0, post_local_gradient_allreduce=False)
    assert pls.post_localSGD_hook(quiet, Bucket()).wait() is Bucket.array
    from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState

    assert sorted(pls.PostLocalSGDState.__slots__) == sorted(PostLocalSGDState.__slots__)


def _orth(m):
    return np.linalg.qr(m.astype(np.float64))[0]  # an orthonormal basis of m's columns


def test_batched_powersgd_against_its_formula():
    """Two compressed steps (error feedback, warm start) of a 10-element bucket (a 4 x 4
    padded matrix, rank 2) in a group of one, against the formula: out = P P^T M with
    P = orth(M orth(Q)), Q the previous step's M^T P. (torch 2.13's own batched hook fails:
    its _orthogonalize asserts a 3-d batch and is given a 2-d Q.) Full rank gives M back."""
    from shardflow.comm import LocalCommunicator

    class Bucket:
        def __init__(self, a):
            self.array = a

        def buffer(self):
            return self

        def index(self):
            return 0

        def is_last(self):
            return True

    state = hooks.powerSGD.PowerSGDState(LocalCommunicator(), matrix_approximation_rank=2,
                                         start_powerSGD_iter=2)
    state.iter = 2  # past the uncompressed start
    q = np.random.default_rng(3).standard_normal((4, 2)).astype(np.float32)
    state.q_memory_dict[0], state.p_memory_dict[0] = q.copy(), np.empty((4, 2), np.float32)
    err = np.zeros(16)
    for k in range(2):
        g = np.random.default_rng(k).standard_normal(10).astype(np.float32)
        got = hooks.powerSGD.batched_powerSGD_hook(state, Bucket(g.copy())).wait()
        m = (np.pad(g, (0, 6)) + err).reshape(4, 4)
        p = _orth(m @ _orth(q))
        out = p @ p.T @ m
        np.testing.assert_allclose(got, out.ravel()[:10], rtol=1e-4, atol=1e-5)
        err = (m - out).ravel()
        np.testing.assert_allclose(state.error_dict[0], err, atol=1e-5)
        q = m.T @ p
    assert state.compression_stats()[1:] == (20, 32) and state.iter == 4
    full = hooks.powerSGD.PowerSGDState(LocalCommunicator(), matrix_approximation_rank=4,
                                        start_powerSGD_iter=0, use_error_feedback=False,
                                        warm_start=False)
    g = np.random.default_rng(5).standard_normal(16).astype(np.float32)  # full rank
    np.testing.assert_allclose(
        hooks.powerSGD.batched_powerSGD_hook(full, Bucket(g.copy())).wait(), g, atol=1e-4)
