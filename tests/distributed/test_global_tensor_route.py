"""The global-tensor core's structure, in one process: the route is turned on by the first
placement and off by ``route.disable()``, the sbp rule table is complete for the elementwise
ops and refuses an op claimed twice, the fallback is listed by ``comm_plan()``, and the
modules of ``shardflow/distributed`` import one another without a circle."""

import ast
import importlib
import warnings
from pathlib import Path

import numpy as np
import pytest

import shardflow as sf
import shardflow.distributed as dist
from shardflow.autograd import dispatch
from shardflow.distributed import comm_plan, placement, route, rules, sbp
from shardflow.distributed.rules.elementwise import ELEMENTWISE_OPS
from shardflow.distributed.rules.registry import RuleSet, build_table

# ------------------------------------------------------------------------------ the route


def test_first_placement_turns_the_route_on_and_disable_undoes_it():
    assert not route.is_enabled() and dispatch._hooks[0] is None
    ops_before = dict(dispatch.OPS)
    assert "to_global" not in ops_before
    p = placement("cpu")
    assert route.is_enabled() and dispatch._hooks[0] is rules.handle
    assert dispatch.OPS["to_global"] is dist.to_global
    placement("cpu")  # idempotent: a second placement changes nothing
    route.enable()
    assert dispatch._hooks[0] is rules.handle
    x = sf.ones(4, 2).to_global(p, sbp.split(0))
    assert x.is_global and x.sbp == (sbp.split(0),)
    route.disable()
    assert not route.is_enabled() and dispatch._hooks[0] is None
    assert dispatch._global_handler[0] is None
    assert dict(dispatch.OPS) == ops_before  # exactly what enable() added is gone
    route.disable()  # idempotent too
    assert dispatch._global_handler[0] is None


# ------------------------------------------------------------------------------ the rule table

# Registered by the elementwise op files but not elementwise in the sbp sense: they reduce
# to one bool (allclose, equal), or have their own rule (where: three operands, no kwargs).
NOT_ELEMENTWISE = {"allclose", "equal", "isclose", "where"}
ELEMENTWISE_FILES = ("shardflow.ops.arithmetic", "shardflow.ops.elementwise",
                     "shardflow.ops.rounding", "shardflow.ops.comparison")


def test_every_elementwise_op_has_an_sbp_rule():
    """The elementwise name lists are explicit; an op added to an elementwise op file without
    being listed there (or here, as not elementwise) fails this test."""
    missing = []
    for name, f in dispatch.OPS.items():
        if getattr(getattr(f, "__wrapped__", f), "__module__", "") not in ELEMENTWISE_FILES:
            continue
        if name in NOT_ELEMENTWISE:
            continue
        if name not in rules.RULES:
            missing.append(name)
    assert not missing, f"elementwise ops with no sbp rule (add them to rules/elementwise.py): {missing}"
    # and the lists name real ops (a misspelt name would silently never match)
    unknown = [n for n in ELEMENTWISE_OPS if n not in dispatch.OPS]
    assert not unknown, unknown


def test_in_place_forms_use_the_in_place_rule():
    ip = rules.RULES["add_"]
    assert ip is rules.RULES["relu_"] and ip is not rules.RULES["add"]
    assert rules.RULES["add"] is rules.RULES["gelu"] is rules.RULES["eq"]


def test_an_op_claimed_twice_is_refused():
    a, b = RuleSet("first"), RuleSet("second")
    a.add(("sum",), lambda *x: None)
    with pytest.raises(ValueError, match="listed twice in the first family"):
        a.add(("sum",), lambda *x: None)
    b.add(("sum",), lambda *x: None)
    with pytest.raises(ValueError, match="'sum' has a rule in both the first and the second"):
        build_table(a, b)
    assert set(build_table(a)) == {"sum"}


def test_every_family_owns_its_rules():
    owners = {}
    for fam in rules.FAMILIES:
        for name in fam.rules:
            owners.setdefault(name, []).append(fam.family)
    assert all(len(v) == 1 for v in owners.values())
    assert set(owners) == set(rules.RULES)
    assert owners["sum"] == ["reductions"] and owners["linear"] == ["matmul"]
    assert owners["cross_entropy"] == ["losses"] and owners["getitem"] == ["indexing"]


# ------------------------------------------------------------------------------ the fallback


def test_the_fallback_is_warned_and_listed_by_comm_plan():
    p = placement("cpu")
    full = np.arange(12, dtype=np.float32).reshape(6, 2)
    x = sf.tensor(full).to_global(p, sbp.split(0))
    with comm_plan() as plan:
        y = x * 2  # a rule: nothing listed
    assert plan.fallbacks == [] and "re-shard" not in str(plan)
    with comm_plan() as plan, pytest.warns(UserWarning, match="op 'cumsum' has no sbp rule"):
        y = x.cumsum(0)
    assert plan.fallbacks == ["cumsum"]
    assert "gather -> compute -> re-shard (no sbp rule): cumsum" in str(plan)
    assert y.sbp == (sbp.split(0),)  # re-sharded like its input
    np.testing.assert_allclose(y.numpy(), np.cumsum(full, 0))
    with comm_plan() as plan, warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per op: no second warning
        x.cumsum(0)
    assert plan.fallbacks == ["cumsum"]  # but listed every time


# ------------------------------------------------------------------------------ no circles

PACKAGE = Path(dist.__file__).parent


def _edges(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (module level and inside functions)."""
    mods = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join((package, *parts))
        mods[name.removesuffix(".__init__")] = path
    edges = {}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here[: len(here) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    target = f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                    if target in mods:
                        out.add(target)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in mods)
        out.discard(name)
        edges[name] = out
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_distributed_modules_import_each_other_without_a_circle():
    edges = _edges(PACKAGE, "shardflow.distributed")
    assert "shardflow.distributed.rules.handler" in edges  # the walk saw the package
    assert _cycles(edges) == []
    # the core, bottom up: nothing below the route reaches the placement or the rules
    core_low = ["sbp", "plan", "layout", "spec", "boxing", "global_tensor"]
    for m in core_low:
        deps = edges[f"shardflow.distributed.{m}"]
        assert not any(d.endswith((".placement", ".route")) or ".rules" in d for d in deps), (m, deps)


def test_the_circle_check_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_public_names_are_kept():
    for name in ("sbp", "placement", "DeviceMesh", "init_device_mesh", "to_global", "to_local",
                 "from_local", "distribute_tensor", "redistribute", "full_tensor", "comm_plan",
                 "CommPlan", "local_map"):
        assert hasattr(dist, name), name
    gt = importlib.import_module("shardflow.distributed.global_tensor")
    for name in ("GlobalSpec", "make_global", "from_local", "to_global", "full_tensor"):
        assert hasattr(gt, name), name  # zero.py, fsdp/ and checkpoint/ import these
    assert sf.placement is dist.placement
