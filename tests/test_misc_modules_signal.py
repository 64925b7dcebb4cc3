"""``torch.signal.windows`` and ``torch.quasirandom.SobolEngine`` against torch 2.13."""

import numpy as np
import pytest
import torch

import shardflow as sf

_EXTRA = {"general_cosine": {"a": [0.5, 0.3, 0.2]}, "exponential": {"tau": 2.0},
          "gaussian": {"std": 1.5}, "kaiser": {"beta": 5.0}, "general_hamming": {"alpha": 0.6}}


@pytest.mark.parametrize("name", torch.signal.windows.__all__)
def test_windows_match_torch(name):
    t_fn, s_fn = getattr(torch.signal.windows, name), getattr(sf.signal.windows, name)
    for M in (0, 1, 2, 5, 8):
        for sym in (True, False):
            for t_dt, s_dt in ((torch.float32, sf.float32), (torch.float64, sf.float64), (None, None)):
                for extra in ({} if name != "general_cosine" else {"a": [0.7, 0.3]}, _EXTRA.get(name, {})):
                    want = t_fn(M, sym=sym, dtype=t_dt, **extra)
                    got = s_fn(M, sym=sym, dtype=s_dt, **extra)
                    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
                    torch.testing.assert_close(torch.from_numpy(got.numpy()), want.detach(),
                                               msg=f"{name} M={M} sym={sym} {extra}")
    assert s_fn(3, requires_grad=True, **_EXTRA.get(name, {})).requires_grad


def test_window_errors_match_torch():
    cases = [("hann", (-1,), {}), ("hann", (4,), {"dtype": "int64"}), ("gaussian", (4,), {"std": 0.0}),
             ("exponential", (4,), {"tau": -1.0}), ("exponential", (4,), {"center": 1.0}),
             ("kaiser", (4,), {"beta": -1.0}), ("general_cosine", (4,), {"a": []}),
             ("general_cosine", (4,), {"a": 3})]
    for name, args, kwargs in cases:
        for lib in (torch, sf):
            kw = {k: (getattr(lib, v) if k == "dtype" else v) for k, v in kwargs.items()}
            with pytest.raises((ValueError, TypeError)) as err:
                getattr(lib.signal.windows, name)(*args, **kw)
            if lib is torch:
                want = (type(err.value), str(err.value).replace("torch.", ""))
            else:
                assert (type(err.value), str(err.value).replace("shardflow.", "")) == want, name
    # the exponential window takes a center when not symmetric
    torch.testing.assert_close(
        torch.from_numpy(sf.signal.windows.exponential(6, sym=False, center=1.5).numpy()),
        torch.signal.windows.exponential(6, sym=False, center=1.5))


def test_sobol_unscrambled_matches_torch_exactly():
    for dim in (1, 3, 40):
        t_eng, s_eng = torch.quasirandom.SobolEngine(dim), sf.quasirandom.SobolEngine(dim)
        np.testing.assert_array_equal(s_eng.sobolstate.numpy(), t_eng.sobolstate.numpy())
        for op, arg in [("draw", 1), ("draw", 5), ("fast_forward", 3), ("draw", 4), ("reset", None),
                        ("fast_forward", 6), ("draw", 3), ("reset", None), ("draw_base2", 3),
                        ("draw_base2", 3), ("draw", 2)]:
            if op == "reset":
                t_eng.reset(), s_eng.reset()
            elif op == "fast_forward":
                t_eng.fast_forward(arg), s_eng.fast_forward(arg)
            else:
                want, got = getattr(t_eng, op)(arg), getattr(s_eng, op)(arg)
                assert got.dtype == sf.float32
                np.testing.assert_array_equal(got.numpy(), want.numpy())
            assert s_eng.num_generated == t_eng.num_generated
            np.testing.assert_array_equal(s_eng.quasi.numpy(), t_eng.quasi.numpy())
    want = torch.quasirandom.SobolEngine(2).draw(4, dtype=torch.float64)
    np.testing.assert_array_equal(sf.quasirandom.SobolEngine(2).draw(4, dtype=sf.float64).numpy(), want.numpy())
    out = sf.empty(0)
    assert sf.quasirandom.SobolEngine(2).draw(3, out=out) is out and tuple(out.shape) == (3, 2)
    np.testing.assert_array_equal(sf.quasirandom.SobolEngine(2000).sobolstate.numpy()[-3:],
                                  torch.quasirandom.SobolEngine(2000).sobolstate.numpy()[-3:])


def _is_net(x: np.ndarray, m: int) -> bool:
    """Every coordinate, and every pair-of-coordinates box of volume 2**-m for the first two
    (a (0, m, 2)-net), holds exactly one of the 2**m points."""
    n = 2 ** m
    ok = all(np.array_equal(np.sort(np.floor(x[:, j] * n)), np.arange(n)) for j in range(x.shape[1]))
    for a in range(m + 1):
        cells = np.floor(x[:, 0] * 2 ** a) * 2 ** (m - a) + np.floor(x[:, 1] * 2 ** (m - a))
        ok &= len(np.unique(cells)) == n
    return ok


def test_sobol_scrambled_has_torch_distribution_properties():
    for lib in (torch, sf):
        x = lib.quasirandom.SobolEngine(4, scramble=True, seed=7).draw_base2(5).numpy()
        assert _is_net(x, 5) and 0 <= x.min() and x.max() < 1, lib.__name__
        assert not _is_net(np.random.default_rng(0).random((32, 4)), 5)  # the check can fail
    eng = sf.quasirandom.SobolEngine(3, scramble=True, seed=1)
    again = sf.quasirandom.SobolEngine(3, scramble=True, seed=1)
    other = sf.quasirandom.SobolEngine(3, scramble=True, seed=2)
    first = eng.draw(8).numpy()
    np.testing.assert_array_equal(first, again.draw(8).numpy())
    assert not np.array_equal(first, other.draw(8).numpy())
    np.testing.assert_array_equal(eng.reset().draw(8).numpy(), first)
    sf.manual_seed(3)
    a = sf.quasirandom.SobolEngine(3, scramble=True).draw(4).numpy()
    sf.manual_seed(3)
    np.testing.assert_array_equal(sf.quasirandom.SobolEngine(3, scramble=True).draw(4).numpy(), a)
    assert repr(eng) == repr(torch.quasirandom.SobolEngine(3, scramble=True, seed=1))


def test_sobol_errors_match_torch():
    for lib in (torch, sf):
        with pytest.raises(ValueError, match=r"for SobolEngine is \[1, 21201\]"):
            lib.quasirandom.SobolEngine(0)
        eng = lib.quasirandom.SobolEngine(2)
        eng.draw(3)
        with pytest.raises(ValueError, match=r"n=3\+2\*\*2=7"):
            eng.draw_base2(2)
