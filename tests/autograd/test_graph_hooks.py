"""torch.autograd.graph's hooks on the backward pass (``autograd/graph_hooks.py``, ``graph.py``):
``register_multi_grad_hook`` (all / any), node hooks and metadata, ``GradientEdge`` /
``get_gradient_edge`` as ``autograd.grad`` inputs, ``increment_version``,
``allow_mutation_on_saved_tensors`` — each program run on shardflow and torch 2.13."""

import numpy as np
import pytest
import torch

import shardflow as sf

LIBS = [sf, torch]


def both(program):
    out = [program(lib) for lib in LIBS]
    assert out[0] == out[1], out
    return out[0]


def leaves(lib):
    return (lib.tensor([1.0, 2.0, 3.0], requires_grad=True), lib.tensor([1.0, 1.0, 1.0], requires_grad=True),
            lib.tensor([2.0, 2.0, 2.0], requires_grad=True))


def _sums(gs):
    return tuple(None if g is None else float(g.sum()) for g in gs)


def test_multi_grad_hook_all_once_per_pass_with_none_for_unreached():
    def program(lib):
        a, b, c = leaves(lib)
        calls = []
        handle = lib.autograd.graph.register_multi_grad_hook((a, b, c), lambda gs: calls.append(_sums(gs)))
        (a * 2 + b).sum().backward()  # c is not reached: None
        (a * 2 + b + c * c).sum().backward()
        h = a * 3  # an intermediate among the tensors
        lib.autograd.graph.register_multi_grad_hook((h, b), lambda gs: calls.append(_sums(gs)))
        (h * b).sum().backward()
        handle.remove()
        (a + b + c).sum().backward()  # removed: not called
        return calls

    # the (h, b) hook sees h * b's pass; the (a, b, c) one, still registered then, too; after
    # its removal only the (h, b) hook fires, h unreached
    assert both(program) == [(6.0, 3.0, None), (6.0, 3.0, 12.0), (3.0, 18.0), (9.0, 18.0, None),
                             (None, 3.0)]


def test_multi_grad_hook_any_gets_the_first_gradient_once():
    def program(lib):
        a, b, _ = leaves(lib)
        calls = []
        handle = lib.autograd.graph.register_multi_grad_hook((a, b), lambda g: calls.append(float(g.sum())),
                                                             mode="any")
        (a * 2 + b).sum().backward()
        (b * 5).sum().backward()
        handle.remove()
        return len(calls), calls[1]

    assert both(program) == (2, 15.0)


def test_multi_grad_hook_errors():
    for lib in LIBS:
        a, b, _ = leaves(lib)
        with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got bad"):
            lib.autograd.graph.register_multi_grad_hook((a, b), lambda g: None, mode="bad")
        with pytest.raises(AssertionError, match="Expected gradient function to be set"):
            lib.autograd.graph.register_multi_grad_hook((a, lib.tensor([1.0])), lambda g: None)


def test_node_prehook_posthook_and_metadata():
    def program(lib):
        a, _, _ = leaves(lib)
        z = (a * 2) * 3
        node = z.grad_fn
        log = []
        node.register_prehook(lambda go: log.append(("pre", float(go[0].sum()))))
        node.register_hook(lambda gi, go: log.append(("post", float(gi[0].sum()), gi[1])))
        scale = node.register_prehook(lambda go: (go[0] * 10,))
        node.metadata["tag"] = "kept"
        z.sum().backward(retain_graph=True)
        first = a.grad.tolist()
        scale.remove()
        a.grad = None
        z.sum().backward()
        return log, first, a.grad.tolist(), node.metadata.get("tag"), isinstance(node, lib.autograd.graph.Node)

    log, first, second, tag, is_node = both(program)
    assert first == [60.0] * 3 and second == [6.0] * 3 and tag == "kept" and is_node


def test_node_posthook_replaces_input_gradients():
    def program(lib):
        a, _, _ = leaves(lib)
        y = a.exp()
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,))
        y.sum().backward()
        return a.grad.tolist()

    assert both(program) == [7.0] * 3


def test_gradient_edge_as_grad_input():
    def program(lib):
        g = lib.autograd.graph
        a, _, _ = leaves(lib)
        y = a * 2
        edge = g.get_gradient_edge(y)
        assert isinstance(edge, tuple) and edge.node is y.grad_fn and edge.output_nr == 0
        r1 = lib.autograd.grad((y * y).sum(), edge)[0].tolist()
        leaf_edge = g.get_gradient_edge(a)
        r2 = lib.autograd.grad(((a * 2) ** 2).sum(), [leaf_edge])[0].tolist()
        return r1, r2, leaf_edge.node.name()

    assert both(program) == ([4.0, 8.0, 12.0], [8.0, 16.0, 24.0], "torch::autograd::AccumulateGrad")


def test_get_gradient_edge_needs_requires_grad():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="does not require gradients"):
            lib.autograd.graph.get_gradient_edge(lib.tensor([1.0]))


def test_increment_version_trips_the_saved_tensor_check():
    for lib in LIBS:
        a, b, _ = leaves(lib)
        h = b * 1
        y = (a * h).sum()
        lib.autograd.graph.increment_version(h)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_allow_mutation_on_saved_tensors_keeps_saved_values():
    def program(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
            z0 = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            z = z0.clone()
            w = z * z
            z.mul_(2)
            w.sum().backward()
        return z0.grad.tolist(), ctx is not None

    assert both(program) == ([2.0, 4.0, 6.0], True)


def test_leaf_tensor_hooks_run_under_autograd_grad():
    """Regression: ``autograd.grad`` skipped a captured leaf's tensor hooks (torch runs them
    and returns the hooked gradient)."""
    def program(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a * 1
        seen = []
        a.register_hook(lambda g: seen.append("a") or g * 10)
        b.register_hook(lambda g: seen.append("b") or g * 10)
        (r,) = lib.autograd.grad((b * 2).sum(), [a])
        (r2,) = lib.autograd.grad((a * 2).sum(), [a], create_graph=True)
        return seen, r.tolist(), r2.tolist()

    assert both(program) == (["b", "a", "a"], [200.0] * 3, [20.0] * 3)


def test_multi_grad_hook_in_create_graph_pass():
    def program(lib):
        a, b, _ = leaves(lib)
        calls = []
        lib.autograd.graph.register_multi_grad_hook((a, b), lambda gs: calls.append(_sums(gs)))
        (a * a * b).sum().backward(create_graph=True)
        return calls

    assert both(program) == [(12.0, 14.0)]


def test_hook_arrays_unchanged_values():
    a = sf.tensor(np.arange(3.0, dtype=np.float32), requires_grad=True)
    sf.autograd.graph.register_multi_grad_hook((a,), lambda gs: None)
    (a * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.arange(3.0))
