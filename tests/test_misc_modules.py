"""Small torch modules programs touch: ``torch.compiler``, ``torch.types``, ``torch.overrides``,
``torch.cuda`` / ``torch.cpu`` streams and events, profiler extras and small nn/testing/utils
names, each against torch 2.13 (CPU). Window functions and ``SobolEngine`` are in
``test_misc_modules_signal.py``."""

import inspect

import numpy as np
import pytest
import torch

import shardflow as sf


# ---------------------------------------------------------------- torch.compiler
def test_compiler_names_and_signatures_match_torch():
    for name in ("allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin", "disable",
                 "is_compiling", "is_dynamo_compiling", "is_exporting", "reset", "set_stance",
                 "substitute_in_graph", "list_backends", "wrap_numpy"):
        t_params = list(inspect.signature(getattr(torch.compiler, name)).parameters)
        s_params = list(inspect.signature(getattr(sf.compiler, name)).parameters)
        assert s_params == t_params, name
    assert sf.compiler.compile is sf.compile
    assert sf.compiler.is_exporting() is False is torch.compiler.is_exporting()
    assert "inductor" in sf.compiler.list_backends()


def test_is_compiling_is_true_only_while_compile_traces():
    seen = []

    def f(x):
        seen.append((sf.compiler.is_compiling(), sf.compiler.is_dynamo_compiling()))
        return x * 2

    g = sf.compile(f)
    x = sf.ones(3)
    np.testing.assert_array_equal(g(x).numpy(), [2.0, 2.0, 2.0])
    g(x)  # the replay does not run f's Python body
    assert seen == [(True, True)]
    assert sf.compiler.is_compiling() is False is torch.compiler.is_compiling()
    f(x)
    assert seen[-1] == (False, False)


def test_compiler_markers_return_the_function():
    def f(x):
        return x + 1

    for name in ("allow_in_graph", "assume_constant_result", "disable"):
        assert getattr(sf.compiler, name)(f) is f
    with sf.compiler.disable():  # no function: a decorator that is also a context manager
        pass
    assert sf.compiler.disable()(f) is f
    assert sf.compiler.substitute_in_graph(len)(f) is f
    with pytest.raises(TypeError, match="expected a function"):
        sf.compiler.allow_in_graph(3)
    sf.compiler.reset()
    sf.compiler.cudagraph_mark_step_begin()


def test_set_stance_checks_arguments_and_restores():
    assert sf.compiler.current_stance() == "default"
    with sf.compiler.set_stance("force_eager"):
        assert sf.compiler.current_stance() == "force_eager"
    assert sf.compiler.current_stance() == "default"

    @sf.compiler.set_stance("eager_on_recompile")
    def f():
        return sf.compiler.current_stance()

    assert sf.compiler.current_stance() == "default"
    assert f() == "eager_on_recompile"
    sf.compiler.set_stance("fail_on_recompile")
    assert sf.compiler.current_stance() == "fail_on_recompile"
    sf.compiler.set_stance()
    assert sf.compiler.current_stance() == "default"
    for lib in (torch, sf):
        with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend set"):
            lib.compiler.set_stance("force_eager", force_backend="eager")
    with pytest.raises(ValueError, match="unknown stance 'bogus'"):
        sf.compiler.set_stance("bogus")
    assert sf.compiler.current_stance() == "default"
