"""``torch.nn.modules.module.register_module_*_hook``: hooks on every module's call, run
before each module's own, compared with torch 2.13 (they were missing)."""
import pytest
import torch

import shardflow as sf


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def _record(lib):
    mm = lib.nn.modules.module
    model, seen = _model(lib), []
    model[2].register_forward_hook(lambda m, a, o: seen.append(("own fwd", type(m).__name__)))
    handles = [
        mm.register_module_forward_pre_hook(lambda m, a: seen.append(("pre", type(m).__name__, tuple(a[0].shape)))),
        mm.register_module_forward_hook(lambda m, a, o: seen.append(("fwd", type(m).__name__, round(float(o.sum()), 5)))),
        mm.register_module_forward_hook(lambda m, a, k, o: o * 2 if isinstance(m, lib.nn.ReLU) else None,
                                        with_kwargs=True),
        mm.register_module_full_backward_pre_hook(lambda m, go: seen.append(("bpre", type(m).__name__))),
        mm.register_module_full_backward_hook(
            lambda m, gi, go: seen.append(("bwd", type(m).__name__, None if gi[0] is None else tuple(gi[0].shape)))),
    ]
    x = lib.ones(2, 3, requires_grad=True)
    try:
        out = model(x)
        out.sum().backward()
    finally:
        for h in handles:
            h.remove()
    seen.append(("after remove", round(float(model(x).sum()), 5)))
    return seen, round(float(out.sum()), 5), x.grad.tolist()


def test_global_hooks_run_as_torchs():
    got, want = _record(sf), _record(torch)
    assert got[1:] == want[1:]
    assert got[0] == want[0]


@pytest.mark.parametrize("name", ["ipu", "xpu", "mtia"])
def test_unavailable_device_moves_raise_as_torch(name):
    with pytest.raises(Exception) as th:
        getattr(torch.nn.Linear(1, 1), name)()
    with pytest.raises(type(th.value)) as got:
        getattr(sf.nn.Linear(1, 1), name)()
    assert str(got.value) == str(th.value).split(". Ensure")[0]
