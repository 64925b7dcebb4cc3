"""torch.compile's backend/mode checks, torch._dynamo.list_backends / exc / explain, against
torch 2.13: an unknown backend or mode is refused as torch refuses it (it was accepted and
ignored), valid ones compile as before."""
import pytest
import torch

import shardflow as sf


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e), isinstance(e, RuntimeError)
    return None


@pytest.mark.parametrize("kwargs", [
    {"backend": "nope"}, {"mode": "fastest"}, {"mode": "max_autotune"},
    {"mode": "default", "options": {"max_autotune": True}}])
def test_unknown_backend_or_mode_is_refused_as_torch(kwargs):
    th = _raised(lambda: torch.compile(lambda a: a, **kwargs))
    sf_ = _raised(lambda: sf.compile(lambda a: a, **kwargs))
    assert th is not None and sf_ == th


def test_module_compile_in_place_checks_too():
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        sf.nn.Linear(2, 2).compile(mode="fast")


@pytest.mark.parametrize("kwargs", [{"backend": "eager"}, {"backend": "aot_eager"}, {"mode": "reduce-overhead"},
                                    {"mode": "max-autotune-no-cudagraphs"}, {"options": {"x": 1}},
                                    {"backend": lambda gm, example_inputs: gm}])
def test_valid_backends_and_modes_compile(kwargs):
    f = sf.compile(lambda a: (a * 2).sum(), **kwargs)
    assert f(sf.ones(3)).item() == 6.0


def test_list_backends_and_exception_types_are_torchs():
    assert sf._dynamo.list_backends() == torch._dynamo.list_backends()
    assert sf._dynamo.list_backends(exclude_tags=()) == [
        b for b in torch._dynamo.list_backends(exclude_tags=()) if "TESTING_ONLY" not in b]
    assert issubclass(sf._dynamo.exc.InvalidBackend, sf._dynamo.exc.TorchDynamoException)
    assert issubclass(sf._dynamo.exc.TorchDynamoException, RuntimeError)


def test_explain_reports_the_traced_graph():
    def f(a):
        return (a + 1).relu().sum()
    got = sf._dynamo.explain(f)(sf.ones(2))
    th = torch._dynamo.explain(f)(torch.ones(2))
    assert (got.graph_count, got.graph_break_count) == (th.graph_count, th.graph_break_count) == (1, 0)
    assert got.ops_per_graph == [["add", "relu", "sum"]] and got.op_count == 3
    assert str(got).startswith("Graph Count: 1\nGraph Break Count: 0\nOp Count: 3\n")
    with pytest.raises(TypeError):
        sf._dynamo.explain(f, sf.ones(2))
