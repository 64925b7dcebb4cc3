"""``torch.utils.benchmark`` as the benchmark recipe uses it, against torch: ``Compare``'s
tables to the character (the same Measurements built in both; thread groups, A/B ``env``
rows, ``trim_significant_figures``, ``colorize`` column- and row-wise, ``highlight_warnings``),
``significant_figures`` and ``trim_sigfig``, ``blocked_autorange``'s block size (a fake
clock: torch's overhead rule), and the ``Fuzzer`` (the same sizes, orders, steps and
contiguity from a seed)."""

import numpy as np
import pytest
import torch.utils.benchmark as tb

import shardflow.utils.benchmark as sb

RNG = np.random.default_rng(0)


def _measurements(lib, specs):
    return [lib.Measurement(n, times, lib.TaskSpec(stmt=stmt, setup="pass", label=label, sub_label=sub,
                                                   description=desc, env=env, num_threads=threads))
            for n, times, stmt, label, sub, desc, env, threads in specs]


def _grid():
    specs = []
    for threads in (1, 4):
        for sub in ("[1, 1]", "[64, 1024]"):
            for desc, scale in (("mul/sum", 1.0), ("bmm", 3.0)):
                times = list(RNG.uniform(5e-6, 9e-6, 7) * scale * (1 + 10 * (sub != "[1, 1]")) * 100)
                specs.append((100, times, "f(x)", "Batched dot", sub, desc, None, threads))
    specs.append((10, [2e-3, 2.2e-3, 2.1e-3, 3e-3, 1.9e-3], "g(x)", "Other", None, "only", None, 1))
    return specs


@pytest.mark.parametrize("setup", ["plain", "trim", "colorize", "rowwise", "warnings"])
def test_compare_tables_are_torchs(setup):
    specs = _grid()
    tables = []
    for lib in (tb, sb):
        c = lib.Compare(_measurements(lib, specs))
        if setup in ("trim", "colorize", "rowwise"):
            c.trim_significant_figures()
        if setup == "colorize":
            c.colorize()
        if setup == "rowwise":
            c.colorize(rowwise=True)
        if setup == "warnings":
            c.highlight_warnings()
        tables.append(str(c))
    assert tables[1] == tables[0]
    assert "4 threads: " in tables[0] and "[------" in tables[0]


def test_compare_ab_environments_are_torchs():
    specs = []
    for env, slow in (("environment A: mul/sum", 1.0), ("environment B: bmm", 2.5)):
        for b, n in ((1, 1), (1024, 10000), (10000, 1)):
            times = list(RNG.uniform(1e-5, 1.2e-5, 9) * slow * (1 + b * n / 1e6))
            specs.append((1000, times, "batched_dot(x, x)", "Batched dot", None, f"[{b}, {n}]", env, 1))
    outs = []
    for lib in (tb, sb):
        c = lib.Compare(_measurements(lib, specs))
        c.trim_significant_figures()
        c.colorize()
        outs.append(str(c))
    assert outs[1] == outs[0]
    assert "(environment B: bmm)" in outs[1]  # before, the env rows were merged into one


def test_significant_figures_and_trim_sigfig_are_torchs():
    for times in ([1e-5], [1e-5, 1.1e-5], list(RNG.uniform(1e-6, 2e-6, 40)), list(RNG.uniform(1, 1.0001, 9))):
        ours = sb.Measurement(1, times, sb.TaskSpec("s", "pass"))
        theirs = tb.Measurement(1, times, tb.TaskSpec("s", "pass"))
        assert ours.significant_figures == theirs.significant_figures, times
        assert ours.as_row_name == theirs.as_row_name == "s"  # a property, as torch's
    for x, n in ((3.14159, 2), (22657.3, 3), (0.0123456, 2), (999.6, 3), (5.0, 1)):
        assert sb.trim_sigfig(x, n) == pytest.approx(tb.trim_sigfig(x, n), rel=1e-6), (x, n)


class _Clock:
    """A fake clock: each run of the statement costs ``run`` seconds, each reading of the
    clock ``tick`` (the timer's own overhead)."""

    def __init__(self, run, tick):
        self.t, self.run, self.tick = 0.0, run, tick

    def __call__(self):
        self.t += self.tick
        return self.t


@pytest.mark.parametrize("run, tick, min_run_time", [(1e-6, 0.0, 0.2), (1e-6, 1e-5, 0.2), (1e-3, 1e-7, 0.05)])
def test_blocked_autorange_block_size_is_torchs(run, tick, min_run_time):
    got = []
    for lib in (tb, sb):
        clock = _Clock(run, tick)
        t = lib.Timer("clock.t += clock.run", globals={"clock": clock}, timer=clock)
        m = t.blocked_autorange(min_run_time=min_run_time)
        got.append((m.number_per_run, len(m.raw_times)))
    assert got[1] == got[0]


def _fuzzer(lib, seed):
    return lib.Fuzzer(
        parameters=[
            lib.FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
            lib.FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform"),
            lib.FuzzedParameter("s", minval=1, maxval=3, distribution="uniform"),
            [lib.FuzzedParameter("k2", minval=1.0, maxval=5.0, distribution="uniform")],  # a nested list
        ],
        tensors=[
            lib.FuzzedTensor("x", size=("k0", "k1"), min_elements=128, max_elements=100000,
                             probability_contiguous=0.6),
            lib.FuzzedTensor("y", size=("k1", 4, 2), steps=("s", 1, 2), max_elements=100000,
                             probability_contiguous=0.3),
        ],
        constraints=[lambda p: p["k0"] != 7],
        seed=seed,
    )


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_fuzzer_draws_torchs_sizes_orders_and_steps(seed):
    ours, theirs = list(_fuzzer(sb, seed).take(6)), list(_fuzzer(tb, seed).take(6))
    for (st, sp, sparams), (tt, tp, tparams) in zip(ours, theirs, strict=True):
        assert sparams == tparams
        for name in ("x", "y"):
            assert tuple(st[name].shape) == tuple(tt[name].shape)
            assert st[name].stride() == tt[name].stride()
            a, b = sp[name], tp[name]
            assert (a["numel"], a["is_contiguous"], tuple(a["steps"])) == (b["numel"], b["is_contiguous"], tuple(b["steps"]))
            assert list(a["order"]) == list(b["order"])
    assert any(not p["x"]["is_contiguous"] for _, p, _ in ours)


def test_fuzzer_alias_strict_and_distribution_checks():
    def make(lib):
        return lib.Fuzzer(
            parameters=[lib.FuzzedParameter("k0", minval=2, maxval=50, distribution="loguniform", strict=True),
                        lib.FuzzedParameter("k1", minval=2, maxval=50, distribution="uniform")],
            # strict: a rejected candidate keeps k0 and draws k1 again
            tensors=[lib.FuzzedTensor("x", size=("k0", "k1"), max_elements=300)], seed=3)
    ours = [p for _, _, p in make(sb).take(6)]
    assert ours == [p for _, _, p in make(tb).take(6)]
    assert sb.Fuzzer._resolve_aliases({"a": 3, "b": sb.ParameterAlias("a")}) == {"a": 3, "b": 3}
    assert repr(sb.ParameterAlias("a")) == repr(tb.ParameterAlias("a"))
    with pytest.raises(ValueError, match="cycle"):
        sb.Fuzzer._resolve_aliases({"a": sb.ParameterAlias("b"), "b": sb.ParameterAlias("a")})
    # a {value: probability} distribution: shardflow takes a normalised one (torch 2.13's
    # inverted check refuses it, module docstring) and refuses one that is not
    with pytest.raises(AssertionError, match="not normalized"):
        tb.FuzzedParameter("d", distribution={1: 0.5, 2: 0.5})
    p = sb.FuzzedParameter("d", distribution={1: 0.3, 2: 0.7})
    assert {p.sample(np.random.RandomState(i)) for i in range(20)} == {1, 2}
    with pytest.raises(AssertionError, match="sum to 0.9"):
        sb.FuzzedParameter("d", distribution={1: 0.3, 2: 0.6})
    with pytest.raises(AssertionError, match="Unknown distribution"):
        sb.FuzzedParameter("d", 1, 2, distribution="normal")
    with pytest.raises(ValueError, match="Duplicate names"):
        sb.Fuzzer([sb.FuzzedParameter("x", 1, 2, "uniform")], [sb.FuzzedTensor("x", size=(2,))])
