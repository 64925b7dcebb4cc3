"""pytorch/tutorials' two FX tutorials, run on torch and, with only their imports changed, on
shardflow (``programs/fx/``; see ``test_public_programs.py`` and docs/COMPAT.md, "Public
programs" and "torch.fx"): the printed graphs and generated code are torch's, text for text,
and the traced, fused and interpreted models compute what torch's do from the same weights
and inputs."""

import numpy as np
import pytest

from .programs._harness import HERE, assert_close, run_script, same_draws
from .programs.fx._standins import resnet_modules, tabulate_module

pytestmark = pytest.mark.usefixtures("torch_single_thread")

FX = HERE / "fx"
_TIMES = ("Unfused time: ", "Fused time: ", "jit time: ")


def _run(name, capsys):
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        mod = run_script(FX / f"{name}.py", use_sf, modules={**resnet_modules(lib), **tabulate_module()},
                         after_imports=lambda m: same_draws([m], ["randn"]))
        runs.append((mod, capsys.readouterr().out.splitlines()))
    return runs


def _arrays(t):
    return np.asarray(t.detach().numpy())


def test_fx_conv_bn_fuser_like_torch(capsys):
    """The conv-bn fuser: ``print(traced_model.graph)`` and the fused model's ``print(code)``
    are torch's text; the script's own ``assert_allclose`` of fused against unfused passes on
    both; the ResNet-18 stand-in (same seeded weights, the same ``randn`` input in both
    runs) fused by the script's pass has torch's nodes, no batch norm left, and the output of
    torch's fused model (rtol 1e-4: the folded weights round differently in float32). The
    small model's fusion, redone from torch's weights, gives torch's output too."""
    import torch

    import shardflow

    (th, th_out), (sf, sf_out) = _run("fx_conv_bn_fuser", capsys)
    strip = [line for line in th_out if not line.startswith(_TIMES)]
    assert [line for line in sf_out if not line.startswith(_TIMES)] == strip
    assert [line.split(":")[0] for line in sf_out if line.startswith(_TIMES)] == ["Unfused time", "Fused time", "jit time"]
    assert strip[0] == "graph():" and "    %conv1 : [num_users=1] = call_module[target=conv1](args = (%x,), kwargs = {})" in strip
    assert "    nested_1 = getattr(self.nested, \"1\")(conv2);  conv2 = None" in strip

    assert [(n.op, n.name) for n in sf.fused_rn18.graph.nodes] == [(n.op, n.name) for n in th.fused_rn18.graph.nodes]
    modules = dict(sf.fused_rn18.named_modules())
    called = [type(modules[n.target]).__name__ for n in sf.fused_rn18.graph.nodes if n.op == "call_module"]
    assert "Conv2d" in called and "BatchNorm2d" not in called
    assert "bn" not in sf.fused_rn18.code and "layer1_0_conv1 = getattr(self.layer1, \"0\").conv1(maxpool)" in sf.fused_rn18.code
    assert sf.fused_rn18.code == th.fused_rn18.code
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    assert_close(_arrays(sf.fused_rn18(shardflow.tensor(x))).ravel().tolist(),
                 _arrays(th.fused_rn18(torch.tensor(x))).ravel().tolist(), "fused resnet", rtol=1e-4, atol=1e-5)
    assert_close(_arrays(sf.output).ravel().tolist(), _arrays(th.output).ravel().tolist(), "resnet", rtol=1e-4, atol=1e-5)

    sf.model.load_state_dict({k: shardflow.tensor(v.numpy().copy()) for k, v in th.model.state_dict().items()})
    y = np.random.default_rng(2).standard_normal((3, 1, 2, 2)).astype(np.float32)
    assert_close(_arrays(sf.fuse(sf.model)(shardflow.tensor(y))).ravel().tolist(),
                 _arrays(th.fused_model(torch.tensor(y))).ravel().tolist(), "fused M", rtol=1e-5, atol=1e-6)


def test_fx_profiling_tutorial_like_torch(capsys):
    """The profiling interpreter: ``print(traced_rn18.graph)`` is torch's text, the
    interpreter times the same nodes in the same order (``runtimes_sec``'s keys), its result
    is torch's, and the summary table lists the same (op type, op) rows (sorted by the
    measured times, which differ)."""
    import torch

    import shardflow

    (th, th_out), (sf, sf_out) = _run("fx_profiling_tutorial", capsys)
    graph_end = th_out.index("    return fc") + 1
    assert sf_out[:graph_end] == th_out[:graph_end]
    assert "    %flatten : [num_users=1] = call_function[target=torch.flatten](args = (%avgpool, 1), kwargs = {})" in th_out
    assert [(n.op, n.name) for n in sf.interp.runtimes_sec] == [(n.op, n.name) for n in th.interp.runtimes_sec]
    assert len(sf.interp.runtimes_sec) == len(list(sf.traced_rn18.graph.nodes))
    table_sf, table_th = sf_out[graph_end:], th_out[graph_end:]
    assert table_sf[0].split() == table_th[0].split() == ["Op", "type", "Op", "Average", "runtime", "(s)", "Pct",
                                                          "total", "runtime"]
    assert sorted(tuple(r.split()[:2]) for r in table_sf[2:]) == sorted(tuple(r.split()[:2]) for r in table_th[2:])
    x = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype(np.float32)
    assert_close(_arrays(sf.interp.run(shardflow.tensor(x))).ravel().tolist(),
                 _arrays(th.interp.run(torch.tensor(x))).ravel().tolist(), "interpreted resnet", rtol=1e-4, atol=1e-5)
