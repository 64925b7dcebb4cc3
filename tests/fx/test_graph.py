"""Graph editing, GraphModule, Interpreter, Transformer and ShapeProp against torch 2.13: the
same edit on both frameworks' traces gives the same code and the same values."""

import copy
import operator

import numpy as np
import pytest
import torch as th
import torch.fx  # noqa: F401
from torch.fx.passes.shape_prop import ShapeProp as ThShapeProp

import shardflow as sf
import shardflow.fx as fx
from shardflow.fx.passes.shape_prop import ShapeProp

from ._models import conv_bn, inputs, mlp, pair


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


def _relu_to_sigmoid(gm, lib):
    g = gm.graph
    for node in list(g.nodes):
        if node.op == "call_module" and node.target == "relu":
            with g.inserting_after(node):
                new = g.call_function(lib.sigmoid, node.args)
            node.replace_all_uses_with(new)
            g.erase_node(node)
    g.lint()
    gm.recompile()
    return gm


def test_edit_recompile_as_torch():
    th_model, sf_model = pair(mlp, sf, th)
    th_gm = _relu_to_sigmoid(th.fx.symbolic_trace(th_model), th)
    sf_gm = _relu_to_sigmoid(fx.symbolic_trace(sf_model), sf)
    assert sf_gm.code == th_gm.code
    assert "torch.sigmoid(linear)" in sf_gm.code
    x_sf, x_th = inputs((3, 4), sf, th)
    _close(sf_gm(x_sf), th_gm(x_th))


def test_users_args_and_replace_all_uses_with():
    gm = fx.symbolic_trace(mlp(sf))
    x, linear, relu, add, out, output = gm.graph.nodes
    assert list(x.users) == [linear] and list(relu.users) == [add]
    assert add.args == (relu, 1) and add.all_input_nodes == [relu]
    assert relu.next is add and add.prev is relu
    replaced = relu.replace_all_uses_with(linear)
    assert replaced == [add] and add.args == (linear, 1) and not relu.users
    assert set(linear.users) == {relu, add}
    add.meta["note"] = 1
    assert add.meta == {"note": 1}
    assert fx.map_arg((linear, [add, 3], {"k": x}), lambda n: n.name) == ("linear", ["add", 3], {"k": "x"})


def test_erase_node_with_users_raises_as_torch():
    for lib, trace in ((sf, fx.symbolic_trace), (th, th.fx.symbolic_trace)):
        gm = trace(mlp(lib))
        relu = [n for n in gm.graph.nodes if n.name == "relu"][0]
        with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 users"):
            gm.graph.erase_node(relu)


def test_lint_finds_use_before_definition():
    for lib, trace in ((sf, fx.symbolic_trace), (th, th.fx.symbolic_trace)):
        gm = trace(mlp(lib))
        nodes = list(gm.graph.nodes)
        nodes[1].prepend(nodes[3])  # `add` before `linear`, which it (indirectly) needs
        with pytest.raises(RuntimeError, match="used before it has been defined"):
            gm.graph.lint()


def test_lint_finds_missing_module_target():
    gm = fx.symbolic_trace(mlp(sf))
    del gm.out
    with pytest.raises(RuntimeError, match="references nonexistent attribute out"):
        gm.graph.lint()


def test_eliminate_dead_code_as_torch():
    codes = []
    for lib, trace in ((sf, fx.symbolic_trace), (th, th.fx.symbolic_trace)):
        gm = trace(mlp(lib))
        g = gm.graph
        linear = [n for n in g.nodes if n.name == "linear"][0]
        with g.inserting_after(linear):
            g.call_function(operator.mul, (linear, 2))  # nothing uses it
            g.call_method("add_", (linear, 1))  # a method: pure for torch's DCE, removed
            g.call_function(lib.rand, ((2,),))  # random: impure, kept
        assert g.eliminate_dead_code() is True
        assert g.eliminate_dead_code() is False
        gm.recompile()
        codes.append(gm.code)
    assert codes[0] == codes[1]
    assert "torch.rand((2,))" in codes[0] and "add_ =" not in codes[0] and "mul" not in codes[0]


def test_dead_code_keeps_in_place_functions():
    # a deviation, on the safe side: torch's DCE drops torch.relu_(x) when nothing uses its
    # result (its Python binding has no mutable schema); shardflow keeps in-place functions
    gm = fx.symbolic_trace(mlp(sf))
    g = gm.graph
    linear = [n for n in g.nodes if n.name == "linear"][0]
    with g.inserting_after(linear):
        g.call_function(sf.relu_, (linear,))
    assert g.eliminate_dead_code() is False


def test_hand_built_graph_module_from_dict_root():
    for lib in (sf, th):
        g = (fx if lib is sf else th.fx).Graph()
        x = g.placeholder("x")
        lin = g.call_module("sub.lin", (x,))
        g.output(g.call_function(lib.tanh, (lin,)))
        lib.manual_seed(0)
        mod = lib.nn.Linear(2, 2)
        gm = (fx if lib is sf else th.fx).GraphModule({"sub.lin": mod}, g)
        if lib is sf:
            sf_gm, sf_code = gm, gm.code
        else:
            th_gm, th_code = gm, gm.code
    assert sf_code == th_code
    assert list(sf_gm.state_dict()) == list(th_gm.state_dict()) == ["sub.lin.weight", "sub.lin.bias"]


def test_deepcopy_is_independent():
    gm = fx.symbolic_trace(mlp(sf))
    gm2 = copy.deepcopy(gm)
    assert gm2.code == gm.code
    _relu_to_sigmoid(gm2, sf)
    assert "sigmoid" in gm2.code and "sigmoid" not in gm.code
    x = sf.ones(1, 4)
    assert not np.allclose(gm(x).numpy(), gm2(x).numpy())
    assert gm2.linear.weight is not gm.linear.weight


def test_interpreter_runs_node_by_node_as_torch():
    th_model, sf_model = pair(conv_bn, sf, th)
    th_model.eval()
    sf_model.eval()

    def make(base):
        class Recording(base):
            def __init__(self, gm):
                super().__init__(gm)
                self.seen = []

            def run_node(self, n):
                self.seen.append((n.op, n.name))
                return super().run_node(n)
        return Recording

    x_sf, x_th = inputs((2, 1, 4, 4), sf, th)
    sf_i = make(fx.Interpreter)(fx.symbolic_trace(sf_model))
    th_i = make(th.fx.Interpreter)(th.fx.symbolic_trace(th_model))
    _close(sf_i.run(x_sf), th_i.run(x_th))
    assert sf_i.seen == th_i.seen
    assert [n.name for n in sf_i.env] == [n.name for n in th_i.env]  # values dropped after their last use


def test_interpreter_error_names_the_node():
    gm = fx.symbolic_trace(mlp(sf))
    with pytest.raises(Exception) as e:
        fx.Interpreter(gm).run(sf.ones(2, 3))  # wrong width for linear
    assert any("While executing %linear" in note for note in getattr(e.value, "__notes__", []))
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        fx.Interpreter(gm).run()


def _transformers(lib, fxmod):
    class AddToMul(fxmod.Transformer):
        def call_function(self, target, args, kwargs):
            if target is operator.add:
                target = operator.mul
            return super().call_function(target, args, kwargs)

        def call_module(self, target, args, kwargs):
            if target == "relu":
                return lib.sigmoid(args[0])  # a new op recorded through the tracer's hooks
            return super().call_module(target, args, kwargs)

    return AddToMul


def test_transformer_as_torch():
    th_model, sf_model = pair(mlp, sf, th)
    th_gm = _transformers(th, th.fx)(th.fx.symbolic_trace(th_model)).transform()
    sf_gm = _transformers(sf, fx)(fx.symbolic_trace(sf_model)).transform()
    assert sf_gm.code == th_gm.code
    x_sf, x_th = inputs((3, 4), sf, th)
    _close(sf_gm(x_sf), th_gm(x_th))


def test_shape_prop_as_torch():
    th_model, sf_model = pair(conv_bn, sf, th)
    th_gm, sf_gm = th.fx.symbolic_trace(th_model), fx.symbolic_trace(sf_model)
    x_sf, x_th = inputs((2, 1, 4, 4), sf, th)
    ShapeProp(sf_gm).propagate(x_sf)
    ThShapeProp(th_gm).propagate(x_th)
    for a, b in zip(sf_gm.graph.nodes, th_gm.graph.nodes, strict=True):
        if "tensor_meta" not in b.meta:
            assert "tensor_meta" not in a.meta
            continue
        ma, mb = a.meta["tensor_meta"], b.meta["tensor_meta"]
        assert tuple(ma.shape) == tuple(mb.shape), a.name
        assert str(ma.dtype).split(".")[-1] == str(mb.dtype).split(".")[-1]
        assert ma.stride == mb.stride and ma.requires_grad == mb.requires_grad
    with pytest.raises(NotImplementedError, match="fake_mode"):
        ShapeProp(sf_gm, fake_mode=object())


def test_long_graph_deepcopies_without_deep_recursion():
    def f(x):
        for _ in range(1500):
            x = x + 1
        return x

    gm = fx.symbolic_trace(f)
    gm2 = copy.deepcopy(gm)
    assert len(gm2.graph.nodes) == len(gm.graph.nodes) == 1502 and gm2.code == gm.code
    assert float(gm2(sf.zeros(()))) == 1500.0


def test_submodule_edits_as_torch():
    results = []
    for lib, trace in ((sf, fx.symbolic_trace), (th, th.fx.symbolic_trace)):
        gm = trace(conv_bn(lib))
        bn = [n for n in gm.graph.nodes if n.target == "bn1"][0]
        bn.replace_all_uses_with(bn.args[0])
        gm.graph.erase_node(bn)
        gm.recompile()
        assert gm.add_submodule("extra.inner", lib.nn.ReLU())
        assert gm.delete_submodule("extra.inner") and not gm.delete_submodule("nothing.here")
        gm.delete_all_unused_submodules()
        results.append(([name for name, _ in gm.named_modules()], list(gm.state_dict())))
    assert results[0] == results[1]


def test_pickle_round_trip(tmp_path):
    import pickle

    th_model, sf_model = pair(conv_bn, sf, th)
    gm = fx.symbolic_trace(sf_model)
    _relu_to_sigmoid(gm, sf)
    again = pickle.loads(pickle.dumps(gm))
    assert again.code == gm.code and type(again).__name__ == "Net"
    assert str(again.graph) == str(gm.graph)
    x_sf, _ = inputs((2, 1, 4, 4), sf, th)
    _close(again(x_sf), gm(x_sf).detach())
    sf.save(gm, tmp_path / "gm.pt")
    loaded = sf.load(tmp_path / "gm.pt", weights_only=False)
    _close(loaded(x_sf), gm(x_sf).detach())
