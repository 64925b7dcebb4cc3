"""backward_graph of the indexed writes (scatter family, index_put, index_copy,
masked_scatter, fill_diagonal_), linear algebra and special functions: the gradient of the
gradient against torch 2.13 and float64 finite differences (tests/autograd/_double_backward)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(11)
X = R.standard_normal((3, 4))
S = R.standard_normal((2, 4))
P = R.uniform(0.5, 1.5, (3, 4))  # positive, no zeros (prod)
PS = R.uniform(0.5, 1.5, (2, 4))


def _idx(m, values):
    return m.tensor(np.asarray(values), dtype=m.int64)


SCATTER_INDEX = [[0, 2, 0, 1], [2, 2, 1, 0]]  # repeats along dim 0: positions folded twice


def _cube(t):
    return (t ** 3).sum()


INDEX_SPECS = {  # name: (f(m, x, src), x, src): two-input indexed writes, cubed
    "scatter": (lambda m, x, s: m.scatter(x, 0, _idx(m, [[0, 2, 1, 1], [1, 0, 2, 0]]), s), X, S),
    "scatter_add": (lambda m, x, s: m.scatter_add(x, 0, _idx(m, SCATTER_INDEX), s), X, S),
    "scatter_add_partial_src": (lambda m, x, s: m.scatter_add(x, 1, _idx(m, [[0, 3], [1, 1]]), s), X, S),
    "scatter_reduce_sum": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "sum"), X, S),
    "scatter_reduce_sum_noself": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "sum",
                                                                   include_self=False), X, S),
    "scatter_reduce_mean": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "mean"), X, S),
    "scatter_reduce_mean_noself": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "mean",
                                                                    include_self=False), X, S),
    "scatter_reduce_amax": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "amax"), X, S),
    "scatter_reduce_amin_noself": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "amin",
                                                                    include_self=False), X, S),
    "scatter_reduce_prod": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "prod"), P, PS),
    "scatter_reduce_prod_noself": (lambda m, x, s: m.scatter_reduce(x, 0, _idx(m, SCATTER_INDEX), s, "prod",
                                                                    include_self=False), P, PS),
    "index_put_value": (lambda m, x, s: m.index_put(x, (_idx(m, [2, 0]),), s), X, S),
    "index_put_accumulate": (lambda m, x, s: m.index_put(x, (_idx(m, [2, 2]),), s, accumulate=True), X, S),
    "index_put_broadcast": (lambda m, x, s: m.index_put(x, (_idx(m, [1, 0, 2]), _idx(m, [3, 2, 3])), s[0, :1]),
                            X, S),
    "setitem_mask": (lambda m, x, s: _setitem(x, x > 0.3, s.reshape(-1)[: int((x > 0.3).sum())] * 1.0), X, S),
    "setitem_slice_newaxis": (lambda m, x, s: _setitem(x, (slice(0, 2), None), s.unsqueeze(1) * 2.0), X, S),
    "setitem_mask_and_int": (lambda m, x, s: _setitem(x, (m.tensor([True, False, True]), _idx(m, [0, 3])),
                                                      s[0, :2]), X, S),
    "setitem_scalar_broadcast": (lambda m, x, s: _setitem(x, (Ellipsis, 2), s[1, 1]), X, S),
    "index_copy": (lambda m, x, s: m.index_copy(x, 0, _idx(m, [2, 0]), s), X, S),
    "index_copy_dim1": (lambda m, x, s: m.index_copy(x, 1, _idx(m, [3, 1]), s.T[:3]), X, S),
    "masked_scatter": (lambda m, x, s: m.masked_scatter(x, x > 0.0, s), X, S),
}


def _setitem(x, index, value):
    y = x * 1.0
    y[index] = value
    return y


# torch 2.13's double backward of scatter/scatter_add rejects an index smaller than src
# ("invalid gradient ... got [2, 2] but expected shape compatible with [2, 4]"): finite
# differences only there.
NO_TORCH_REF = {"scatter_add_partial_src"}


@pytest.mark.parametrize("name", list(INDEX_SPECS))
def test_indexed_write_double_backward(name):
    f, x, s = INDEX_SPECS[name]
    check_double_backward(lambda m, x, s: _cube(f(m, x, s)), [x, s], rtol=1e-5, atol=1e-7,
                          torch_ref=name not in NO_TORCH_REF)


def test_fill_diagonal_double_backward():
    check_double_backward(lambda m, x: _cube((x * 1.0).fill_diagonal_(0.5)), [X], rtol=1e-5, atol=1e-7)


def test_scatter_reduce_prod_with_zero_stays_first_order():
    x = sf.tensor(np.array([[1.0, 0.0], [2.0, 3.0]]), requires_grad=True)
    s = sf.tensor(np.array([[2.0, 5.0]]), requires_grad=True)
    out = sf.scatter_reduce(x, 0, sf.tensor([[0, 0]]), s, "prod")
    g, = sf.autograd.grad(_cube(out), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[24.0, 0.0], [12.0, 27.0]])
    with pytest.raises(RuntimeError, match="ScatterReduce"):
        g.sum().backward()


# ---------------------------------------------------------------------------- linear algebra
A = R.standard_normal((3, 3)) + 3.0 * np.eye(3)  # well conditioned, det > 0
AB = R.standard_normal((2, 3, 3)) + 3.0 * np.eye(3)
B = R.standard_normal((3, 2))
BV = R.standard_normal(3)
W = R.standard_normal((3, 4))  # pinv, wide


def _spd(m, x):
    return x @ x.mT + 3.0 * m.eye(x.shape[-1], dtype=x.dtype)


LINALG_SPECS = {  # name: (f(m, *xs) -> scalar, inputs)
    "inverse": (lambda m, a: (m.linalg.inv(a) ** 2).sum(), [A]),
    "inverse_batched": (lambda m, a: (m.inverse(a) ** 3).sum(), [AB]),
    "det": (lambda m, a: m.linalg.det(a) ** 2, [A]),
    "det_batched": (lambda m, a: (m.det(a) ** 2).sum(), [AB]),
    "slogdet": (lambda m, a: (m.linalg.slogdet(a)[1] ** 2).sum(), [AB]),
    "logdet": (lambda m, a: m.logdet(a) ** 2, [A]),
    "solve": (lambda m, a, b: (m.linalg.solve(a, b) ** 2).sum(), [A, B]),
    "solve_vector": (lambda m, a, b: (m.linalg.solve(a, b) ** 3).sum(), [A, BV]),
    "solve_right": (lambda m, a, b: (m.linalg.solve(a, b.mT, left=False) ** 2).sum(), [A, B]),
    "cholesky": (lambda m, x: (m.linalg.cholesky(_spd(m, x)) ** 3).sum(), [A]),
    "cholesky_upper": (lambda m, x: (m.linalg.cholesky(_spd(m, x), upper=True) ** 2).sum(), [AB]),
    "solve_triangular_lower": (lambda m, a, b: (m.linalg.solve_triangular(a, b, upper=False) ** 2).sum(), [A, B]),
    "solve_triangular_upper_right": (
        lambda m, a, b: (m.linalg.solve_triangular(a, b.mT, upper=True, left=False) ** 2).sum(), [A, B]),
    "solve_triangular_unit": (
        lambda m, a, b: (m.linalg.solve_triangular(a, b, upper=True, unitriangular=True) ** 3).sum(), [A, B]),
    "cholesky_solve": (lambda m, x, b: (m.cholesky_solve(b, m.linalg.cholesky(_spd(m, x))) ** 2).sum(), [A, B]),
    "pinv_wide": (lambda m, a: (m.linalg.pinv(a) ** 2).sum(), [W]),
    "pinv_tall": (lambda m, a: (m.linalg.pinv(a.mT) ** 3).sum(), [W]),
    "matrix_exp": (lambda m, a: (m.linalg.matrix_exp(a * 0.3) ** 2).sum(), [A]),
}


@pytest.mark.parametrize("name", list(LINALG_SPECS))
def test_linalg_double_backward(name):
    f, xs = LINALG_SPECS[name]
    check_double_backward(f, xs, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["inverse", "det", "solve"])
def test_linalg_third_order(name):
    f, xs = LINALG_SPECS[name]
    results = []
    for m in (sf, torch):
        ts = [m.tensor(x, requires_grad=True) for x in xs]
        g, = m.autograd.grad(f(m, *ts), ts[0], create_graph=True)
        h, = m.autograd.grad((g * g).sum(), ts[0], create_graph=True)
        k, = m.autograd.grad((h ** 2).sum(), ts[0])
        results.append(k.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------- special functions
POS = R.uniform(0.6, 3.0, (2, 3))
NEGX = np.array([[-0.4, -1.7, 0.3], [2.5, -2.3, 1.1]])  # reflection branches, no poles
U = R.uniform(-0.8, 0.8, (2, 3))
XL = np.array([[0.0, 1.5, -0.7], [2.0, 0.0, 0.4]])  # zeros: xlogy's x == 0 rule

SPECIAL_SPECS = {  # name: (f(m, *xs) -> scalar, inputs)
    "lgamma": (lambda m, x: (m.lgamma(x) ** 2).sum(), [POS]),
    "lgamma_reflected": (lambda m, x: (m.lgamma(x) ** 2).sum(), [NEGX]),
    "digamma": (lambda m, x: (m.digamma(x) ** 2).sum(), [POS]),
    "digamma_reflected": (lambda m, x: m.digamma(x).sum(), [NEGX]),
    "polygamma1": (lambda m, x: (m.polygamma(1, x) ** 2).sum(), [POS]),
    "polygamma2": (lambda m, x: m.special.polygamma(2, x).sum(), [POS]),
    "mvlgamma": (lambda m, x: (m.mvlgamma(x + 1.0, 2) ** 2).sum(), [POS]),
    "erfinv": (lambda m, x: (m.erfinv(x) ** 2).sum(), [U]),
    "xlogy": (lambda m, x, y: (m.xlogy(x, y) ** 2).sum(), [XL, POS]),
    "xlogy_broadcast": (lambda m, x, y: (m.special.xlogy(x, y[:1]) ** 3).sum(), [XL, POS]),
}


@pytest.mark.parametrize("name", list(SPECIAL_SPECS))
def test_special_double_backward(name):
    f, xs = SPECIAL_SPECS[name]
    check_double_backward(f, xs, rtol=1e-6, atol=1e-8)


def test_polygamma_third_order():
    results = []
    for m in (sf, torch):
        x = m.tensor(POS, requires_grad=True)
        g, = m.autograd.grad(m.lgamma(x).sum(), x, create_graph=True)
        h, = m.autograd.grad(g.sum(), x, create_graph=True)
        k, = m.autograd.grad((h * x).sum(), x)
        results.append(k.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7)


def test_xlogy_first_derivative_at_zero_x_is_log_y():
    """Regression: the x gradient at x == 0 was 0; torch's is log(y) (0 where y <= 0)."""
    grads = []
    for m in (sf, torch):
        x = m.tensor([0.0, 0.0, 1.5, 0.0], dtype=m.float64, requires_grad=True)
        y = m.tensor([0.7, -1.0, 2.0, 0.0], dtype=m.float64, requires_grad=True)
        m.xlogy(x, y).sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])
    np.testing.assert_allclose(grads[0][0][0], np.log(0.7))


# ---------------------------------------------------------------------------- grid_sample, embedding_bag
IMG = R.standard_normal((2, 2, 3, 4))
GRID = R.uniform(-1.3, 1.3, (2, 2, 3, 2))  # some samples outside: every padding mode's branches
EMB = R.standard_normal((5, 3))
PSW = R.uniform(0.5, 1.5, 6)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_double_backward(padding_mode, align_corners):
    def f(m, x, grid):
        out = m.nn.functional.grid_sample(x, grid, padding_mode=padding_mode, align_corners=align_corners)
        return _cube(out)

    check_double_backward(f, [IMG, GRID], rtol=1e-6, atol=1e-8)


def test_grid_sample_nearest_double_backward():
    f = lambda m, x, grid: _cube(m.nn.functional.grid_sample(x * 1.0, grid.detach(), mode="nearest",  # noqa: E731
                                                             align_corners=False))
    check_double_backward(f, [IMG, GRID], rtol=1e-6, atol=1e-8)


def _bags(m):
    return _idx(m, [1, 3, 3, 0, 4, 1]), _idx(m, [0, 2, 2, 5])  # an empty bag, a repeated row


EMBEDDING_BAG_SPECS = {  # name: f(m, weight, per_sample_weights)
    "sum": lambda m, w, p: m.nn.functional.embedding_bag(_bags(m)[0], w, _bags(m)[1], mode="sum"),
    "mean": lambda m, w, p: m.nn.functional.embedding_bag(_bags(m)[0], w, _bags(m)[1], mode="mean"),
    "max": lambda m, w, p: m.nn.functional.embedding_bag(_bags(m)[0], w, _bags(m)[1], mode="max"),
    "mean_2d_padding": lambda m, w, p: m.nn.functional.embedding_bag(_idx(m, [[1, 3, 3], [0, 4, 1]]), w,
                                                                     mode="mean", padding_idx=3),
    "sum_per_sample_weights": lambda m, w, p: m.nn.functional.embedding_bag(
        _bags(m)[0], w, _bags(m)[1], mode="sum", per_sample_weights=p),
}


@pytest.mark.parametrize("name", list(EMBEDDING_BAG_SPECS))
def test_embedding_bag_double_backward(name):
    """torch 2.13 has no double backward of embedding_bag ("the derivative for
    '_embedding_bag_backward' is not implemented"): finite differences, and the first
    derivative against torch."""
    f = EMBEDDING_BAG_SPECS[name]
    loss = lambda m, w, p: _cube(f(m, w, p)) + (p ** 2).sum()  # noqa: E731
    g_sf, _ = check_double_backward(loss, [EMB, PSW], rtol=1e-6, atol=1e-8, torch_ref=False)
    ts = [torch.tensor(a, requires_grad=True) for a in (EMB, PSW)]
    g_t = torch.autograd.grad(loss(torch, *ts), ts)
    for a, b in zip(g_sf, g_t):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-6, atol=1e-8)


def _rounding_program(t):
    x = t.tensor([1.3, -2.7, 0.4], dtype=t.float64, requires_grad=True)
    y = t.tensor([0.7, 1.1, -0.9], dtype=t.float64, requires_grad=True)
    z = (x.floor() * x ** 2 + t.remainder(x ** 2, y) * y + t.fmod(x, y) * x + x.frac() ** 2
         + t.div(x, y, rounding_mode="floor") + x.sign() * x + x.round() * x.ceil() * x.trunc()).sum()
    gx, gy = t.autograd.grad(z, (x, y), create_graph=True)
    (gx.sum() + (gy ** 2).sum()).backward()
    return [a.detach().numpy() for a in (gx, gy, x.grad, y.grad)]


def test_rounding_ops_differentiate_twice_like_torch():
    # floor/ceil/round/trunc/sign/rounded div have zero gradients (a constant, also when
    # differentiated again); frac and remainder/fmod are linear in g with a fixed quotient
    for got, want in zip(_rounding_program(sf), _rounding_program(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
