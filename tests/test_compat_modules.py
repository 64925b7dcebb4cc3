"""torch module paths programs import that shardflow lacked: ``torch.quantization`` (and its
submodules), ``torch.nn.quantized`` / ``.dynamic`` / ``torch.nn.intrinsic`` / ``torch.nn.qat``,
``torch.distributed._composable`` (``fsdp``, ``replicate``, ``checkpoint``) and
``fsdp.register_fsdp_forward_method``; each against torch 2.13 (CPU). ``torch.library`` is in
``test_torch_library.py``, ``flex_attention`` in ``tests/ops/test_flex_attention.py``."""

import importlib

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.testing.mpi import run_mpi

# torch 2.13 deprecates its own eager quantization (in favour of torchao): not what is tested
pytestmark = [pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated"),
              pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")]


# ---------------------------------------------------------------- torch.quantization
def test_quantization_is_the_legacy_path_of_ao_quantization():
    import shardflow.ao.quantization as ao

    q = importlib.import_module("shardflow.quantization")
    shared = [n for n in dir(ao) if not n.startswith("_")]
    assert shared and all(getattr(q, n) is getattr(ao, n) for n in shared)
    # every name both have is the same kind of object in torch and shardflow (function/class/module)
    tq = torch.quantization
    for n in shared:
        if hasattr(tq, n):
            assert callable(getattr(tq, n)) == callable(getattr(q, n)), n
    # torch's submodule paths import, and the two names that are also functions are the functions
    for sub in ("observer", "qconfig", "fake_quantize", "quantize", "stubs", "fuse_modules", "quantize_fx"):
        for pkg in ("quantization", "ao.quantization"):
            importlib.import_module(f"shardflow.{pkg}.{sub}")
            importlib.import_module(f"torch.{pkg}.{sub}")
    from shardflow.ao.quantization.fuse_modules import fuse_modules
    from shardflow.ao.quantization.qconfig import default_qconfig
    assert fuse_modules is ao.fuse_modules and default_qconfig is ao.default_qconfig
    for name in ("quantize", "fuse_modules"):  # still the functions after the submodule imports
        assert callable(getattr(q, name)) and callable(getattr(tq, name)) and callable(getattr(ao, name))
    from shardflow.quantization.observer import MinMaxObserver
    from shardflow.quantization.stubs import QuantStub
    assert MinMaxObserver is ao.MinMaxObserver and QuantStub is ao.QuantStub
    assert sf.quantization is q


def test_quantize_fx_imports_and_refuses_with_the_eager_equivalent():
    from shardflow.quantization.quantize_fx import convert_fx, fuse_fx, prepare_fx, prepare_qat_fx

    m = sf.nn.Linear(2, 2)
    for fn, args in ((prepare_fx, (m, {}, (sf.ones(1, 2),))), (prepare_qat_fx, (m, {}, (sf.ones(1, 2),))),
                     (convert_fx, (m,)), (fuse_fx, (m,))):
        with pytest.raises(NotImplementedError, match="FX graph mode.*eager mode instead: torch.ao.quantization"):
            fn(*args)


def test_dynamic_quantization_through_the_legacy_path_matches_torch():
    rng = np.random.default_rng(0)
    w, b, x = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (4,), (3, 8)))
    outs = []
    for lib in (torch, sf):
        model = lib.nn.Sequential(lib.nn.Linear(8, 4))
        with lib.no_grad():
            model[0].weight.copy_(lib.tensor(w))
            model[0].bias.copy_(lib.tensor(b))
        qm = lib.quantization.quantize_dynamic(model, {lib.nn.Linear}, dtype=lib.qint8)
        assert type(qm[0]) is lib.nn.quantized.dynamic.Linear
        outs.append(qm(lib.tensor(x)).numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


def test_nn_legacy_quantized_paths_are_the_ao_modules():
    import shardflow.ao.nn as aonn

    assert sf.nn.quantized.Linear is aonn.quantized.Linear
    assert sf.nn.quantized.dynamic.Linear is aonn.quantized.dynamic.Linear
    assert sf.nn.intrinsic.LinearReLU is aonn.intrinsic.LinearReLU
    assert sf.nn.intrinsic.qat.LinearReLU is aonn.intrinsic.qat.LinearReLU
    assert sf.nn.intrinsic.quantized.LinearReLU is aonn.intrinsic.quantized.LinearReLU
    assert sf.nn.qat.Linear is aonn.qat.Linear
    for path in ("nn.quantized", "nn.quantized.dynamic", "nn.intrinsic", "nn.intrinsic.qat",
                 "nn.intrinsic.quantized", "nn.qat", "ao.nn.quantized", "ao.nn.quantized.dynamic"):
        importlib.import_module(f"shardflow.{path}")
        importlib.import_module(f"torch.{path}")
    assert torch.nn.quantized.Linear is torch.ao.nn.quantized.Linear  # the same aliasing in torch


# ---------------------------------------------------------------- torch.distributed._composable
def test_composable_fsdp_is_the_fsdp2_api():
    from shardflow.distributed import fsdp
    from shardflow.distributed._composable import fsdp as cfsdp

    tc = importlib.import_module("torch.distributed._composable.fsdp")
    names = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "fully_shard",
             "register_fsdp_forward_method"]
    from shardflow.distributed._composable.fsdp.fully_shard import FSDPModule, fully_shard

    assert fully_shard is fsdp.fully_shard and FSDPModule is fsdp.FSDPModule
    importlib.import_module("torch.distributed._composable.fsdp.fully_shard")
    for n in names:
        assert getattr(cfsdp, n) is getattr(fsdp, n)
        assert getattr(tc, n) is getattr(torch.distributed.fsdp, n)  # torch aliases them too


def test_composable_replicate_checks_as_torch_and_matches_plain_training_on_one_rank():
    from shardflow.distributed._composable import replicate

    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    m, ref = sf.nn.Linear(4, 3, bias=False), sf.nn.Linear(4, 3, bias=False)
    for mod in (m, ref):
        with sf.no_grad():
            mod.weight.copy_(sf.tensor(w))
    assert replicate(m) is m
    for mod in (m, ref):
        mod(sf.tensor(x)).pow(2).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6)
    assert list(dict(m.named_parameters())) == ["weight"]  # names unchanged (composable)
    with pytest.raises(RuntimeError, match="can only be applied to a module once"):
        replicate(m)
    with pytest.raises(RuntimeError, match="Expected device_id to be int or torch.device"):
        replicate(sf.nn.Linear(2, 2), device_id="cpu")
    with pytest.raises(NotImplementedError, match="ignored_modules"):
        replicate(sf.nn.Sequential(sf.nn.Linear(2, 2)), ignored_modules=[sf.nn.Linear(2, 2)])


def _mlp(lib, weights, dropout=0.0):
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Dropout(dropout), lib.nn.Linear(8, 3))
    with lib.no_grad():
        m[0].weight.copy_(lib.tensor(weights[0]))
        m[3].weight.copy_(lib.tensor(weights[1]))
        m[0].bias.zero_()
        m[3].bias.zero_()
    return m


def _run(lib, m, x):
    xi = lib.tensor(x, requires_grad=True)
    y = m(xi)
    (y * y).sum().backward()
    return y.detach().numpy(), m[0].weight.grad.numpy(), m[3].weight.grad.numpy(), xi.grad.numpy()


def test_composable_checkpoint_values_and_gradients_match_torch():
    import torch.distributed._composable as tc

    from shardflow.distributed._composable import checkpoint

    rng = np.random.default_rng(3)
    weights = [rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((3, 8)).astype(np.float32)]
    x = rng.standard_normal((5, 4)).astype(np.float32)
    tm, sm = _mlp(torch, weights), _mlp(sf, weights)
    tc.checkpoint(tm)
    assert checkpoint(sm) is sm
    assert list(dict(sm.named_parameters())) == list(dict(tm.named_parameters()))  # names unchanged
    for got, want in zip(_run(sf, sm, x), _run(torch, tm, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_composable_checkpoint_recomputes_in_backward_with_the_same_dropout_mask():
    from shardflow.distributed._composable import checkpoint

    rng = np.random.default_rng(4)
    weights = [rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((3, 8)).astype(np.float32)]
    x = rng.standard_normal((5, 4)).astype(np.float32)
    plain, ck = _mlp(sf, weights, dropout=0.5), _mlp(sf, weights, dropout=0.5)
    checkpoint(ck)
    calls = []
    ck[1].register_forward_hook(lambda mod, args, out: calls.append(1))
    sf.manual_seed(7)
    want = _run(sf, plain, x)
    sf.manual_seed(7)
    got = _run(sf, ck, x)
    assert len(calls) == 2  # the forward, and its recomputation during backward
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_composable_checkpoint_arguments_and_determinism_check_as_torch():
    from shardflow.distributed._composable import checkpoint
    from shardflow.distributed._composable.checkpoint_activation import CheckpointError

    for lib, ck in ((torch, importlib.import_module("torch.distributed._composable").checkpoint), (sf, checkpoint)):
        with pytest.raises(NotImplementedError, match="use_reentrant=True is not supported in composable checkpoint"):
            ck(lib.nn.Linear(2, 2), use_reentrant=True)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
            ck(lib.nn.Linear(2, 2), foo=1)

    class Flaky(sf.nn.Module):  # saves one more tensor on its second run
        def __init__(self):
            super().__init__()
            self.lin = sf.nn.Linear(3, 3)
            self.runs = 0

        def forward(self, x):
            self.runs += 1
            y = self.lin(x)
            return (y * y).tanh() if self.runs > 1 else y * y

    m = checkpoint(Flaky())
    with pytest.raises(CheckpointError, match="different metadata"):
        m(sf.randn(2, 3)).sum().backward()
    m = checkpoint(Flaky(), determinism_check="none")
    m(sf.randn(2, 3)).sum().backward()  # not checked: the recomputation's saves are used as they are


def test_register_fsdp_forward_method_without_fsdp_is_a_no_op_as_torch():
    for lib in (torch, sf):
        m = lib.nn.Linear(2, 2)
        before = m.forward
        lib.distributed.fsdp.register_fsdp_forward_method(m, "does_not_exist")  # no check without FSDP
        assert m.forward == before and "does_not_exist" not in m.__dict__


REPLICATE_AND_FORWARD_METHOD = r"""
import numpy as np
import shardflow as torch
import shardflow.distributed as dist
from shardflow.distributed._composable import replicate
from shardflow.distributed._composable.fsdp import fully_shard, register_fsdp_forward_method

dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
w = rng.standard_normal((4, 6)).astype(np.float32)
x = rng.standard_normal((2 * world, 6)).astype(np.float32)

# replicate: each rank's gradient is the mean over the ranks' batches = the full batch's
m = torch.nn.Linear(6, 4, bias=False)
with torch.no_grad():
    m.weight.copy_(torch.tensor(w + rank))  # rank 0's weights are broadcast at the first forward
replicate(m)
m(torch.tensor(x[2 * rank: 2 * rank + 2])).pow(2).sum().backward()
ref = torch.nn.Linear(6, 4, bias=False)
with torch.no_grad():
    ref.weight.copy_(torch.tensor(w))
(ref(torch.tensor(x)).pow(2).sum() / world).backward()
np.testing.assert_allclose(m.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-5, atol=1e-5)

# register_fsdp_forward_method: a method other than forward sees the gathered parameters
seen = []  # whether score() saw the sharded (global) or the gathered weight


class Scorer(torch.nn.Linear):
    def score(self, inp):
        seen.append(self.weight.is_global)
        return torch.nn.functional.linear(inp, self.weight).sum(-1)

s = Scorer(6, 4, bias=False)
with torch.no_grad():
    s.weight.copy_(torch.tensor(w))
fully_shard(s)
register_fsdp_forward_method(s, "score")
got = s.score(torch.tensor(x))
np.testing.assert_allclose(got.numpy(), (x @ w.T).sum(-1), rtol=1e-5, atol=1e-5)
assert seen == [False], seen  # unregistered, the method would see the Split(0) global weight
try:
    register_fsdp_forward_method(s, "nope")
except ValueError as e:
    assert "does not have a method nope" in str(e)
else:
    raise AssertionError("no ValueError")
print("rank", rank, "ok")
"""


def test_replicate_and_fsdp_forward_method_on_two_ranks():
    res = run_mpi(REPLICATE_AND_FORWARD_METHOD, n=2, timeout=120).check()
    assert res.stdout.count("ok") == 2


# ---------------------------------------------------------------- more torch.ao.quantization names
def test_quant_type_mappings_and_lookups_match_torch():
    for lib in (torch, sf):
        aq = lib.ao.quantization
        assert [(m.name, int(m.value)) for m in aq.QuantType] == [("DYNAMIC", 0), ("STATIC", 1), ("QAT", 2),
                                                                 ("WEIGHT_ONLY", 3)]
        assert aq.quant_type.QuantType is aq.QuantType
        assert aq.get_static_quant_module_class(lib.nn.Linear) is lib.ao.nn.quantized.Linear
        assert aq.get_static_quant_module_class(lib.nn.Conv2d) is lib.ao.nn.quantized.Conv2d
        assert aq.get_dynamic_quant_module_class(lib.nn.Linear) is lib.ao.nn.quantized.dynamic.Linear
        assert aq.get_static_quant_module_class(lib.nn.Softplus, {lib.nn.Softplus: lib.nn.Tanh}) is lib.nn.Tanh
        with pytest.raises(AssertionError, match="does not have a corresponding quantized module class"):
            aq.get_static_quant_module_class(lib.nn.Softplus)
        with pytest.raises(AssertionError, match="does not have a corresponding quantized module class"):
            aq.get_dynamic_quant_module_class(lib.nn.Softplus)
        assert aq.DEFAULT_STATIC_QUANT_MODULE_MAPPINGS[lib.nn.Linear] is lib.ao.nn.quantized.Linear
        assert aq.DEFAULT_QAT_MODULE_MAPPINGS[lib.nn.Linear] is lib.ao.nn.qat.Linear
        assert aq.DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS[lib.nn.Linear] is lib.ao.nn.quantized.dynamic.Linear
        prop = aq.get_default_qconfig_propagation_list()
        assert {lib.nn.Linear, lib.nn.Conv2d, lib.nn.Sequential, lib.ao.quantization.QuantStub} <= prop
        assert lib.nn.Softplus not in prop
        assert aq.quantization_mappings.get_static_quant_module_class is aq.get_static_quant_module_class


def _qscheme(lib):
    """torch.per_tensor_symmetric (shardflow keeps the qschemes in shardflow.quant: gap list)."""
    return lib.per_tensor_symmetric if lib is torch else lib.quant.per_tensor_symmetric


def test_qconfig_equals_and_named_qconfigs_match_torch():
    for lib in (torch, sf):
        aq = lib.ao.quantization
        same = aq.QConfig(activation=aq.MinMaxObserver.with_args(quant_min=0, quant_max=127),
                          weight=aq.MinMaxObserver.with_args(dtype=lib.qint8, qscheme=_qscheme(lib)))
        assert aq.qconfig_equals(aq.default_qconfig, same)
        assert not aq.qconfig_equals(aq.default_qconfig, aq.default_per_channel_qconfig)
        assert aq.qconfig_equals(None, None) and not aq.qconfig_equals(aq.default_qconfig, None)
        assert aq.default_debug_qconfig.activation is aq.RecordingObserver is aq.default_debug_observer
        assert aq.default_weight_only_qconfig.activation is lib.nn.Identity
        assert aq.default_activation_only_qconfig.weight is lib.nn.Identity
        assert aq.qconfig_equals(aq.default_weight_only_qconfig,
                                 aq.QConfig(activation=lib.nn.Identity, weight=aq.default_weight_fake_quant))
        partial = getattr(aq.default_histogram_observer, "p", aq.default_histogram_observer)  # torch wraps it
        assert partial.keywords == {"quant_min": 0, "quant_max": 127} and partial.func is aq.HistogramObserver


def test_recording_observer_and_observer_state_dict_match_torch():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    xs = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(2)]
    got = {}
    for lib in (torch, sf):
        aq = lib.ao.quantization
        rec = aq.RecordingObserver()
        x = lib.tensor(xs[0])
        assert rec(x) is x and len(rec.get_tensor_value()) == 1 and rec.tensor_val[0] is not x
        with pytest.raises(Exception, match="calculate_qparams should not be called for RecordingObserver"):
            rec.calculate_qparams()

        def prepared():
            m = lib.nn.Sequential(aq.QuantStub(), lib.nn.Linear(4, 3), aq.DeQuantStub())
            with lib.no_grad():
                m[1].weight.copy_(lib.tensor(w))
                m[1].bias.zero_()
            m.qconfig = aq.default_qconfig
            return aq.prepare(m.eval())

        m = prepared()
        aq.default_eval_fn(m, [(lib.tensor(x), None) for x in xs])
        sd = aq.get_observer_state_dict(m)
        fresh = prepared()
        aq.load_observer_state_dict(fresh, sd)
        got[lib.__name__] = ({k: v.numpy() for k, v in sd.items()},
                             {k: v.numpy() for k, v in aq.get_observer_state_dict(fresh).items()})
        # torch loads each observer non-strictly: a missing entry keeps the fresh value
        partial_sd = {k: v for k, v in sd.items() if not k.endswith("max_val")}
        partial_sd["9.activation_post_process.min_val"] = sd["1.activation_post_process.min_val"]
        again = prepared()
        aq.load_observer_state_dict(again, partial_sd)
        assert float(again[1].activation_post_process.min_val) == float(sd["1.activation_post_process.min_val"])
        assert float(again[1].activation_post_process.max_val) == float("-inf")
    (t_sd, t_loaded), (s_sd, s_loaded) = got["torch"], got["shardflow"]
    assert list(s_sd) == list(t_sd)
    for k in t_sd:
        np.testing.assert_allclose(s_sd[k], t_sd[k], rtol=1e-6)
        np.testing.assert_allclose(s_loaded[k], t_loaded[k], rtol=1e-6)


def test_torchscript_quantization_is_refused_with_the_eager_workflow_named():
    from shardflow.quantization.quantize_jit import quantize_jit

    aq = sf.ao.quantization
    for fn, args in ((aq.prepare_jit, (None, {})), (aq.convert_jit, (None,)), (aq.quantize_dynamic_jit, (None, {})),
                     (aq.script_qconfig, (aq.default_qconfig,)), (quantize_jit, (None, {}, None, None))):
        with pytest.raises(NotImplementedError, match="TorchScript graph quantization.*eager mode"):
            fn(*args)
