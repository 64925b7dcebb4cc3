"""``torch.autograd.forward_ad`` (``autograd/forward_ad.py``: tangents by the double-vjp trick),
primals and tangents against torch 2.13's forward-mode AD."""

import numpy as np
import pytest
import torch

import shardflow as sf

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)
V = rng.standard_normal((3, 4)).astype(np.float32)
W = rng.standard_normal((5, 4)).astype(np.float32)

PROGRAMS = {
    "sin_mul": lambda m, x, w: (x * x).sin(),
    "matmul": lambda m, x, w: x @ w.t(),
    "mlp": lambda m, x, w: m.tanh(m.nn.functional.linear(x, w)).softmax(-1),
    "exp_sum": lambda m, x, w: x.exp().sum(1),
    "relu": lambda m, x, w: m.relu(x) * 3,
    "log_softmax": lambda m, x, w: x.log_softmax(0),
    "reshape_index": lambda m, x, w: x.reshape(4, 3)[1:].pow(2),
}


def run(lib, program, weight_requires_grad=False):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(lib.tensor(X), lib.tensor(V))
        y = program(lib, dual, lib.tensor(W, requires_grad=weight_requires_grad))
        primal, tangent = fw.unpack_dual(y)
        return np.asarray(primal.detach()), np.asarray(tangent)


def torch_jvp(program):
    """torch's J v by reverse mode (autograd.functional.jvp): torch's forward-mode kernels
    compile some formulas on first use (seconds), too slow for this suite's budget."""
    w = torch.tensor(W)
    out, tangent = torch.autograd.functional.jvp(lambda x: program(torch, x, w), torch.tensor(X),
                                                 torch.tensor(V))
    return out.numpy(), tangent.numpy()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tangents_match_torch(name):
    (p, t), (tp, tt) = run(sf, PROGRAMS[name]), torch_jvp(PROGRAMS[name])
    np.testing.assert_allclose(p, tp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t, tt, rtol=1e-4, atol=1e-5)


def test_same_as_torch_forward_ad_api():
    (p, t), (tp, tt) = run(sf, PROGRAMS["sin_mul"]), run(torch, PROGRAMS["sin_mul"])
    np.testing.assert_allclose(p, tp, rtol=1e-6)
    np.testing.assert_allclose(t, tt, rtol=1e-5, atol=1e-6)


def test_unpack_of_the_dual_itself_and_of_a_plain_tensor():
    for lib in (sf, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(X), lib.tensor(V))
            unpacked = fw.unpack_dual(dual)
            assert type(unpacked).__name__ == "UnpackedDualTensor" and unpacked._fields == ("primal", "tangent")
            np.testing.assert_array_equal(np.asarray(unpacked.tangent), V)
            assert fw.unpack_dual(lib.tensor(X) * 2).tangent is None
        assert fw.unpack_dual(dual).tangent is None  # the level is closed


def test_errors_like_torch():
    for lib in (sf, torch):
        fw = lib.autograd.forward_ad
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(lib.tensor(X), lib.tensor(V))
        with fw.dual_level():
            with pytest.raises(RuntimeError, match="different size than that of the original Tensor"):
                fw.make_dual(lib.tensor(X), lib.tensor(V[:2]))
