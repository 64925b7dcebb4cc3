"""``torch.fx.wrap("name")`` (the string form, torchvision's ``ops/stochastic_depth.py`` and
``swin_transformer.py`` call it at import) against torch: the module's global of that name
(or the builtin) is one ``call_function`` node while a trace runs and the plain function
again after; called inside a function it raises NotImplementedError, as torch's does."""

import types

import numpy as np
import pytest
import torch

import shardflow

SOURCE = '''
import {lib} as torch
import {lib}.fx


def clamp_sum(x, limit):
    return x.sum() if limit > 0 else x  # control flow on a plain int: not traced through


torch.fx.wrap("clamp_sum")
torch.fx.wrap("len")


def f(x):
    return clamp_sum(x, 1) * len(x.shape) + 1
'''


def _program(lib):
    module = types.ModuleType(f"wrap_string_{lib}")
    exec(compile(SOURCE.format(lib=lib), module.__name__, "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_string_form_records_one_node_and_restores_the_global(lib):
    program = _program(lib.__name__)
    original = program.clamp_sum
    gm = lib.fx.symbolic_trace(program.f)
    calls = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert calls == ["clamp_sum", "getattr", "len", "mul", "add"]  # x.shape is a getattr node
    assert program.clamp_sum is original and "len" not in vars(program)  # put back
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert float(gm(lib.tensor(x))) == float(program.f(lib.tensor(x))) == 15.0 * 2 + 1


def test_string_form_inside_a_function_raises_like_torch():
    with pytest.raises(NotImplementedError, match="top level of a module"):
        torch.fx.wrap("len")
    with pytest.raises(NotImplementedError, match="top level of a module"):
        shardflow.fx.wrap("len")
