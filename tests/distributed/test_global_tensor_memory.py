"""Ops on global tensors free what they no longer need when the last reference goes, as
local ops do, not when Python's cyclic collector next runs.

``rules.propagate.run_on_shards`` once substituted the prepared (boxed) inputs with a
recursive closure: the closure referred to itself through its cell, so every op on global
tensors left a reference cycle holding its inputs and boxed forms. Under training the
cyclic collector ran at arbitrary points, so the peak held up to ~20% more activations than
the same step on local tensors (issue 26's planner: global-tensor dp/tp measured 10-20% above
the model). These tests run in one process (a 1-rank placement runs the same rule path),
with the cyclic collector off so the result does not depend on when it would have run.
"""

import gc
import tracemalloc

import numpy as np

import shardflow as sf
from shardflow.distributed import distribute_tensor, from_local, placement, sbp


class _NoCyclicGC:
    def __enter__(self):
        gc.collect()
        self._was = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        self.garbage = gc.collect()  # what only the cyclic collector could free
        if self._was:
            gc.enable()


def _chain(h, n):
    for _ in range(n):  # add and neg save nothing for backward: each input dies at once
        h = -(h + 0.5)
    return h


def test_a_chain_of_global_ops_holds_what_the_local_chain_holds():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(np.float32)  # 256 KiB
    p = placement("cpu")

    def peak(global_):
        x = sf.tensor(a, requires_grad=True)
        # from_local + redistribute: differentiable w.r.t. x (distribute_tensor makes a new leaf)
        h = from_local(x, p, [sbp.broadcast]).redistribute(p, [sbp.split(0)]) if global_ else x
        with _NoCyclicGC() as g:
            tracemalloc.start()
            try:
                out = _chain(h, 30)
                loss = out.sum()
                _, top = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            loss.backward()
            value, grad = float(loss.item()), x.grad.numpy().copy()
            del out, loss, h
        return top, value, grad, g.garbage

    local_peak, local_value, local_grad, _ = peak(False)
    global_peak, global_value, global_grad, garbage = peak(True)
    # the same computation
    assert np.isclose(global_value, local_value, rtol=1e-6), (global_value, local_value)
    np.testing.assert_allclose(global_grad, local_grad, rtol=1e-6)
    # and the same memory: a few live 256 KiB tensors, not the 60 of the chain (15 MiB)
    assert global_peak < local_peak + 2 * a.nbytes, (
        f"global chain peaked at {global_peak / 2**20:.2f} MiB, the local one at "
        f"{local_peak / 2**20:.2f} MiB: the global ops keep their inputs alive")
    assert garbage == 0, f"{garbage} objects in reference cycles after the global ops"


def test_a_block_on_global_tensors_leaves_no_reference_cycles():
    from shardflow.models import GPT, GPTConfig

    sf.manual_seed(0)
    model = GPT(GPTConfig(block_size=8, vocab_size=16, n_layer=1, n_head=2, n_embd=16))
    p = placement("cpu")
    for mod in model.modules():
        for name, param in list(mod.named_parameters(recurse=False)):
            setattr(mod, name, sf.nn.Parameter(distribute_tensor(param.detach(), p, sbp.broadcast)))
    idx = distribute_tensor(sf.tensor(np.arange(16).reshape(2, 8) % 16), p, sbp.split(0))
    model(idx, idx)[1].backward()  # first calls (kernel and ctypes caches), not measured
    with _NoCyclicGC() as g:
        _, loss = model(idx, idx)
        loss.backward()
        del loss
    assert g.garbage == 0, f"{g.garbage} objects in reference cycles after a GPT step on global tensors"
