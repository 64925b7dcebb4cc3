"""``utils.benchmark.Timer`` takes snippets as torch's does: ``stmt`` / ``setup`` written as
indented block strings are dedented (shardflow raised IndentationError), ``torch`` is in the
snippet's globals unless given (here the shardflow package), and what is not built (C++
snippets, Callgrind counts) raises an error that says so."""

import pytest
import torch
import torch.utils.benchmark

import shardflow
import shardflow.utils.benchmark


def _timers(stmt, setup, **kwargs):
    return (torch.utils.benchmark.Timer(stmt, setup, **kwargs),
            shardflow.utils.benchmark.Timer(stmt, setup, **kwargs))


def test_indented_snippets_and_implied_torch_like_torch():
    setup = """
        x = torch.ones((4,))
        y = torch.arange(4.)
    """
    th, sf = _timers("""
        z = x * y
    """, setup)
    # the dedented snippet is what the task spec keeps (and what the Measurement prints)
    assert sf._task_spec.setup == th._task_spec.setup == "x = torch.ones((4,))\ny = torch.arange(4.)"
    assert sf._task_spec.stmt == th._task_spec.stmt == "z = x * y"
    assert sf.timeit(3).number_per_run == th.timeit(3).number_per_run == 3
    assert sf._globals["torch"] is shardflow and th._globals["torch"] is torch


def test_given_torch_global_is_kept():
    sentinel = object()
    sf = shardflow.utils.benchmark.Timer("t", globals={"torch": sentinel, "t": 1})
    assert sf._globals["torch"] is sentinel


def test_cpp_and_callgrind_refuse_clearly():
    with pytest.raises(ValueError, match="Python statements only"):
        shardflow.utils.benchmark.Timer("x * y;", "auto x = torch::ones({128});",
                                        language=shardflow.utils.benchmark.Language.CPP)
    with pytest.raises(NotImplementedError, match="no Callgrind instruction counter.*blocked_autorange"):
        shardflow.utils.benchmark.Timer("1 + 1").collect_callgrind()
