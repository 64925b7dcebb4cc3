"""``torch.jit``'s TorchScript names: scripted/traced code runs eagerly with the same results
as torch's scripted code, the decorators are pass-through, save/load name the fix."""

import re

import numpy as np
import pytest
import torch

import shardflow as sf


def _program(lib):
    """A TorchScript-decorated program, written once for both frameworks."""

    class Block(lib.nn.Module):
        scale: lib.jit.Final[float]

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)
            self.scale = 2.0

        @lib.jit.export
        def doubled(self, x):
            return self.forward(x) * self.scale

        @lib.jit.ignore
        def debug(self, x):
            return float(x.sum())

        @lib.jit.unused
        def never(self, x):
            raise RuntimeError("unused")

        def forward(self, x):
            if lib.jit.is_scripting():
                y = lib.jit.annotate(lib.Tensor, self.lin(x))
            else:
                y = self.lin(x)
            return lib.relu(y)

    @lib.jit.script
    def gelu_ish(x):
        return x * lib.sigmoid(1.702 * x)

    return Block, gelu_ish


def test_scripted_module_and_function_run_like_torch_script():
    t_block, t_fn = _program(torch)
    s_block, s_fn = _program(sf)
    torch.manual_seed(0)
    t_mod = t_block()
    s_mod = s_block()
    s_mod.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()})
    with pytest.warns(DeprecationWarning, match="jit.script` is deprecated"):
        t_scripted = torch.jit.script(t_mod)
    with pytest.warns(DeprecationWarning, match="jit.script` is deprecated"):
        s_scripted = sf.jit.script(s_mod)
    # the module's scripted view: it runs eagerly, on the module's own parameters
    assert isinstance(s_scripted, sf.jit.RecursiveScriptModule) and s_scripted.lin.weight is s_mod.lin.weight
    assert repr(s_scripted) == repr(t_scripted)
    assert list(s_scripted.state_dict()) == list(t_scripted.state_dict())
    assert sf.jit.script(s_scripted) is s_scripted
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(s_scripted(sf.tensor(x)).detach().numpy(), t_scripted(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(s_scripted.doubled(sf.tensor(x)).detach().numpy(),
                               t_scripted.doubled(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    assert s_scripted.debug(sf.tensor(x)) == pytest.approx(t_scripted.debug(torch.tensor(x)), rel=1e-5)
    np.testing.assert_allclose(s_fn(sf.tensor(x)).numpy(), t_fn(torch.tensor(x)).numpy(), rtol=1e-6)
    # trainable as before
    s_scripted(sf.tensor(x)).sum().backward()
    assert s_mod.lin.weight.grad is not None


def test_trace_returns_the_function_or_the_module_view():
    lin = sf.nn.Linear(2, 2)
    with pytest.warns(DeprecationWarning, match="jit.trace` is deprecated"):
        traced = sf.jit.trace(lin, sf.ones(1, 2))
    assert isinstance(traced, sf.jit.ScriptModule) and traced.weight is lin.weight
    np.testing.assert_array_equal(traced(sf.ones(1, 2)).detach().numpy(), lin(sf.ones(1, 2)).detach().numpy())
    f = lambda x: x * 2  # noqa: E731
    with pytest.warns(DeprecationWarning):
        traced_f = sf.jit.trace(f, (sf.ones(2),))
    assert isinstance(traced_f, sf.jit.ScriptFunction) and traced_f(sf.ones(2)).tolist() == [2.0, 2.0]
    assert sf.jit.trace_module(lin, {"forward": sf.ones(1, 2)}) is lin
    assert sf.jit.optimize_for_inference(lin) is lin


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_freeze_as_torch():
    for lib in (torch, sf):
        lin = lib.nn.Sequential(lib.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
            lib.jit.freeze(lin)
        traced = lib.jit.trace(lin, lib.ones(1, 2))
        with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
            lib.jit.freeze(traced)
        frozen = lib.jit.freeze(traced.eval())
        assert repr(frozen) == "RecursiveScriptModule(original_name=Sequential)"
        assert list(frozen.parameters()) == [] and list(frozen.state_dict()) == []
        assert frozen(lib.ones(1, 2)).tolist() == lin(lib.ones(1, 2)).tolist()


def test_predicates_and_helpers_answer_as_torch_in_eager_code():
    for lib in (torch, sf):
        assert lib.jit.is_scripting() is False and not lib.jit.is_tracing()
        assert lib.jit.annotate(list[int], [1]) == [1]
        assert lib.jit.Final is __import__("typing").Final
        def helper(v):
            return v

        with pytest.warns(FutureWarning, match="ignore\\(True\\) has been deprecated"):
            assert lib.jit.ignore(drop=True)(helper) is helper
        assert lib.jit.ignore(helper) is helper and lib.jit.ignore()(helper) is helper
        assert tuple(lib.jit.Attribute(3, int)) == (3, int)
        fut = lib.jit.fork(lambda a, b=1: a + b, 2, b=5)
        assert lib.jit.wait(fut) == 7 and fut.done()


def test_fork_delivers_the_error_at_wait():
    def boom():
        raise ValueError("bad input")

    fut = sf.jit.fork(boom)
    with pytest.raises(ValueError, match="bad input"):
        sf.jit.wait(fut)


def test_script_module_base_and_attribute():
    class Counter(sf.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.count = sf.jit.Attribute(0, int)

        @sf.jit.script_method
        def forward(self, x):
            return x + self.count

    c = Counter()
    assert c.count == 0 and isinstance(c, sf.nn.Module) and c(sf.ones(1)).item() == 1.0


def test_save_and_load_name_the_fix(tmp_path):
    with pytest.raises(RuntimeError, match=r"shardflow.save\(model.state_dict\(\), path\)"):
        sf.jit.save(sf.nn.Linear(2, 2), str(tmp_path / "m.pt"))
    with pytest.raises(RuntimeError, match=r"cannot run TorchScript archives.*load_state_dict\(shardflow.load\(path\)\)"):
        sf.jit.load(str(tmp_path / "m.pt"))
    assert not (tmp_path / "m.pt").exists()


def test_existing_jit_names_are_kept():
    assert callable(sf.jit.compile) and callable(sf.jit.compile_step)
    # the compile tracer module is still importable
    from shardflow.jit.trace import TraceError, trace

    assert callable(trace) and issubclass(TraceError, Exception)


def _tutorial_modules(lib):
    """The Intro-to-TorchScript tutorial's modules, for either library."""

    class MyDecisionGate(lib.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            else:
                return -x

    class MyCell(lib.nn.Module):
        def __init__(self, dg):
            super().__init__()
            self.dg = dg
            self.linear = lib.nn.Linear(4, 4)

        def forward(self, x, h):
            new_h = lib.tanh(self.dg(self.linear(x)) + h)
            return new_h, new_h

    return MyDecisionGate, MyCell


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_scripted_and_traced_views_print_and_run_as_torch():
    """``print`` of traced and scripted modules, nested both ways (a scripted gate inside a
    traced cell), is torch's; outputs equal the eager module's where torch's trace took the
    same branch; ``.code`` / ``.graph`` / ``.save`` say shardflow has no TorchScript."""
    x = np.random.default_rng(0).random((3, 4)).astype(np.float32)
    h = np.random.default_rng(1).random((3, 4)).astype(np.float32)
    views = {}
    for lib in (torch, sf):
        gate_cls, cell_cls = _tutorial_modules(lib)
        lib.manual_seed(0)
        cell = cell_cls(gate_cls())
        xs, hs = lib.tensor(x), lib.tensor(h)
        traced = lib.jit.trace(cell, (xs, hs))
        scripted_gate = lib.jit.script(gate_cls())
        mixed = lib.jit.trace(cell_cls(scripted_gate), (xs, hs))
        scripted_cell = lib.jit.script(cell_cls(scripted_gate))
        views[lib.__name__] = (repr(traced), repr(scripted_gate), repr(mixed), repr(scripted_cell),
                               traced(xs, hs)[0].detach().numpy(), cell(xs, hs)[0].detach().numpy(),
                               [k for k, _ in traced.named_parameters()], traced.linear.weight is cell.linear.weight)
    th, s = views["torch"], views["shardflow"]
    assert s[:4] == th[:4]
    assert th[0].startswith("MyCell(\n  original_name=MyCell\n  (dg): MyDecisionGate(original_name=MyDecisionGate)")
    np.testing.assert_allclose(s[4], th[4], rtol=1e-6)
    np.testing.assert_allclose(s[4], s[5], rtol=0)
    assert s[6] == th[6] and s[7] is True
    gate_cls, cell_cls = _tutorial_modules(sf)
    with pytest.warns(DeprecationWarning):
        traced = sf.jit.trace(cell_cls(gate_cls()), (sf.tensor(x), sf.tensor(h)))
    for attr in ("code", "graph", "inlined_graph"):
        with pytest.raises(NotImplementedError, match=f"TracedModule.{attr}: shardflow has no TorchScript compiler"):
            getattr(traced.dg, attr)
    with pytest.raises(NotImplementedError, match=r"save\('m.pt'\).*shardflow.save\(module.state_dict\(\), path\)"):
        traced.save("m.pt")
    traced.eval()
    assert traced.training is False and traced.dg.training is False


def _doubled(x):
    """twice x"""
    return x * 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_script_function_prints_and_refuses_as_torch():
    """``script(function)`` is torch's ``ScriptFunction`` object: same printout (torch's
    doubled module path), ``qualified_name``, ``__doc__``, results; ``.code`` / ``.graph`` /
    ``.save`` say there is no TorchScript (they were AttributeErrors on a plain function)."""
    th, s = torch.jit.script(_doubled), sf.jit.script(_doubled)
    assert isinstance(th, torch.jit.ScriptFunction) and isinstance(s, sf.jit.ScriptFunction)
    mask = lambda r: re.sub(r"0x[0-9a-f]+", "0x", r).replace("torch.", "shardflow.")  # noqa: E731
    assert mask(repr(s)) == mask(repr(th))
    assert s.qualified_name == th.qualified_name == f"__torch__.{__name__}._doubled"
    assert s.__doc__ == th.__doc__ == "twice x"
    assert s(sf.ones(2)).tolist() == th(torch.ones(2)).tolist()
    for attr in ("code", "graph"):
        with pytest.raises(NotImplementedError, match=f"ScriptFunction.{attr}: shardflow has no TorchScript"):
            getattr(s, attr)
    with pytest.raises(NotImplementedError, match="ScriptFunction.save"):
        s.save("f.pt")
