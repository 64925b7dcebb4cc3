"""``shardflow bench ddp``'s pieces that run in one process: the ``mlp-wide`` workload is
the same model in shardflow and PyTorch (same loss from the same weights), and the
configurations are timed in interleaved rounds."""

import numpy as np

from shardflow.bench import ddp


def test_mlp_wide_is_the_same_model_in_both_frameworks():
    import torch

    import shardflow as sf

    wl = ddp._workloads()["mlp-wide"]
    tm, sm = wl.build(torch), wl.build(sf)
    tparams, sparams = list(tm.parameters()), list(sm.parameters())
    assert [tuple(p.shape) for p in tparams] == [tuple(p.shape) for p in sparams]
    assert sum(p.numel() for p in tparams) == 784 * 2048 + 2 * 2048 * 2048 + 2048 * 10 + 3 * 2048 + 10
    for t, s in zip(tparams, sparams):
        s.array[...] = t.detach().numpy()
    x, y = wl.make_batch(np.random.default_rng(0))
    want = wl.loss(torch, tm, torch.from_numpy(x), torch.from_numpy(y)).item()
    got = float(wl.loss(sf, sm, sf.from_numpy(x), sf.from_numpy(y)).item())
    assert abs(got - want) < 1e-5 * max(1.0, abs(want)), (got, want)


def test_configurations_are_timed_in_interleaved_rounds():
    calls = []
    fns = {k: (lambda k=k: calls.append(k)) for k in ("local", "ddp", "comm")}
    med = ddp.interleaved_times(fns, steps=3, warmup=1, barrier=lambda: calls.append("|"))
    # warmup: one untimed call of each; then each round starts every call with a barrier
    assert calls == ["local", "ddp", "comm"] + ["|", "local", "|", "ddp", "|", "comm"] * 3
    assert set(med) == {"local", "ddp", "comm"} and all(v >= 0 for v in med.values())
