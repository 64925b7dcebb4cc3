"""Saved-tensor hooks (``autograd/saved_hooks.py``, ``torch.autograd.graph.saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks``), the same programs on shardflow and torch 2.13.

Which tensors an op saves is each library's own choice, so pack counts are compared with
torch only where both save the same tensors (``x * y``, custom Functions); for networks the
tests check that every saved tensor went through the hooks and that the gradients match.
"""

import threading

import numpy as np
import pytest
import torch

import shardflow as sf

LIBS = [sf, torch]
X = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def graph(lib):
    return lib.autograd.graph


def recording_hooks(log):
    def pack(t):
        log.append(("pack", t.detach().numpy().copy()))
        return t

    def unpack(t):
        log.append(("unpack", t.detach().numpy().copy()))
        return t

    return pack, unpack


def offload_hooks(log):
    """Pack to a NumPy copy (what an offloading hook does), unpack back to a Tensor."""
    def pack(t):
        log.append("pack")
        return t.detach().numpy().copy()

    def unpack(a):
        log.append("unpack")
        return sf.from_numpy(a) if isinstance(a, np.ndarray) and _lib[0] is sf else torch.from_numpy(a)

    return pack, unpack


_lib = [sf]


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_mul_packs_both_inputs_and_unpacks_each_backward(lib):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(X * 2, requires_grad=True)
    log = []
    with graph(lib).saved_tensors_hooks(*recording_hooks(log)):
        y = (x * w).sum()
    packs = [v for k, v in log if k == "pack"]
    assert len(packs) == 2
    assert sorted(float(p.sum()) for p in packs) == sorted([float(X.sum()), float((X * 2).sum())])
    assert not [k for k, _ in log if k == "unpack"]  # nothing unpacked before backward
    y.backward(retain_graph=True)
    y.backward()
    assert [k for k, _ in log].count("unpack") == 4  # each backward unpacks again
    np.testing.assert_allclose(np.asarray(x.grad.detach()), 2 * (X * 2), rtol=1e-6)


def test_unpack_sees_packed_value_and_its_result_is_used():
    """What unpack returns is what backward reads: scaling it scales the gradient."""
    for lib in LIBS:
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(X * 0 + 3.0, requires_grad=True)
        with graph(lib).saved_tensors_hooks(lambda t: ("box", t.detach().clone()), lambda p: p[1] * 2):
            y = (x * w).sum()
        y.backward()
        np.testing.assert_allclose(np.asarray(x.grad.detach()), np.full_like(X, 6.0))
        np.testing.assert_allclose(np.asarray(w.grad.detach()), 2 * X)


def make_scale(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            y = x * w
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            x2, _ = ctx.saved_tensors  # a second read unpacks again (torch's rule)
            return g * y / x2, g * x

    return Scale


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_custom_function_packs_what_save_for_backward_got(lib):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(X * 0 + 1.5, requires_grad=True)
    log = []
    with graph(lib).saved_tensors_hooks(*recording_hooks(log)):
        y = make_scale(lib).apply(x, w)
    assert [k for k, _ in log] == ["pack", "pack"]
    np.testing.assert_allclose(log[0][1], X)
    np.testing.assert_allclose(log[1][1], X * 1.5)
    y.sum().backward()
    assert [k for k, _ in log].count("unpack") == 4
    np.testing.assert_allclose(np.asarray(x.grad.detach()), np.full_like(X, 1.5), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(w.grad.detach()), X, rtol=1e-6)


def _nets(lib):
    lib.manual_seed(0)
    mlp = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))
    conv = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3, padding=1), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
                             lib.nn.Flatten(), lib.nn.Linear(12, 2))
    return mlp, conv


def _copy_params(src, dst):
    for p, q in zip(src.parameters(), dst.parameters()):
        with torch.no_grad():
            q.copy_(torch.from_numpy(np.asarray(p.detach()).copy()))


def test_offloading_hooks_give_identical_gradients_mlp_and_conv():
    """Pack every saved tensor into a NumPy copy and unpack it back: gradients equal those
    without hooks (and torch's); every pack gets its unpack."""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((4, 3)).astype(np.float32),
              rng.standard_normal((2, 2, 4, 4)).astype(np.float32)]
    nets = _nets(sf)
    torch_nets = _nets(torch)
    for net, tnet, data in zip(nets, torch_nets, inputs):
        _copy_params(net, tnet)
        results = []
        for lib, model in ((sf, net), (torch, tnet)):
            _lib[0] = lib
            x = lib.tensor(data, requires_grad=True)
            model.zero_grad()
            plain = [np.asarray(g.detach()).copy() for g in lib.autograd.grad(model(x).square().sum(),
                                                                              [x, *model.parameters()])]
            log = []
            with graph(lib).saved_tensors_hooks(*offload_hooks(log)):
                loss = model(x).square().sum()
            assert log and set(log) == {"pack"}
            hooked = lib.autograd.grad(loss, [x, *model.parameters()])
            assert log.count("unpack") == log.count("pack")
            for a, b in zip(plain, hooked):
                if lib is sf:  # shardflow: bit for bit
                    np.testing.assert_array_equal(a, np.asarray(b.detach()))
                else:  # torch's own conv backward moves by an ulp between calls (its threads)
                    np.testing.assert_allclose(a, np.asarray(b.detach()), rtol=1e-6, atol=1e-7)
            results.append(plain)
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    _lib[0] = sf


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_no_pack_under_no_grad_or_without_grad(lib):
    x = lib.tensor(X, requires_grad=True)
    log = []
    with graph(lib).saved_tensors_hooks(*recording_hooks(log)):
        with lib.no_grad():
            (x * x).exp()
        lib.tensor(X) * lib.tensor(X)
    assert log == []


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_nested_hooks_innermost_applies_and_exit_restores(lib):
    x = lib.tensor(X, requires_grad=True)
    outer, inner = [], []
    with graph(lib).saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with graph(lib).saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            x * x
        assert (len(outer), len(inner)) == (0, 2)
        x * x
    assert (len(outer), len(inner)) == (2, 2)
    x * x  # no hooks left
    assert (len(outer), len(inner)) == (2, 2)


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_disable_saved_tensors_hooks_errors(lib):
    g = graph(lib)
    with g.disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with g.save_on_cpu():
                pass
    with g.saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again after the block
        with pytest.raises(RuntimeError, match="already on"):
            with g.disable_saved_tensors_hooks("already on"):
                pass


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_unpack_must_return_a_tensor(lib):
    x = lib.tensor(X, requires_grad=True)
    with graph(lib).saved_tensors_hooks(lambda t: 1, lambda p: 5):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_save_on_cpu_cpu_tensors_values_and_class(lib):
    g = graph(lib)
    assert issubclass(g.save_on_cpu, g.saved_tensors_hooks)
    x = lib.tensor(X, requires_grad=True)
    with g.save_on_cpu(pin_memory=False):
        y = (x * x.exp()).sum()
    y.backward()
    np.testing.assert_allclose(np.asarray(x.grad.detach()), np.exp(X) * (1 + X), rtol=1e-5)


def test_hooks_belong_to_the_entering_thread():
    x = sf.tensor(X, requires_grad=True)
    log = []
    seen_in_thread = []

    def other():
        x * x
        seen_in_thread.append(len(log))

    with sf.autograd.graph.saved_tensors_hooks(lambda t: log.append(1) or t, lambda t: t):
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert seen_in_thread == [0]


def test_create_graph_backward_unpacks():
    """The create_graph pass (higher_order.py) unpacks too: a second derivative through
    hooked saved tensors equals torch's."""
    out = []
    for lib in LIBS:
        x = lib.tensor(X, requires_grad=True)
        with graph(lib).saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            y = (x * x * x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        out.append(np.asarray(x.grad.detach()))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)
    np.testing.assert_allclose(out[0], 6 * X, rtol=1e-6)
