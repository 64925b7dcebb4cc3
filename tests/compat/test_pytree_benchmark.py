"""``torch.utils._pytree`` and ``torch.utils.benchmark`` against torch's."""

import collections

import pytest
import torch
import torch.utils._pytree as tp
import torch.utils.benchmark

import shardflow as sf
import shardflow.utils._pytree as sp

Point = collections.namedtuple("Point", "x y")


def _tree():
    return {"b": 1, "a": [2, (3, None)], "p": Point(4, {"z": 5}), "o": collections.OrderedDict(k=6),
            "dd": collections.defaultdict(list, {"q": 7}), "dq": collections.deque([8, 9], maxlen=4), "e": []}


def test_flatten_unflatten_like_torch():
    t_leaves, t_spec = tp.tree_flatten(_tree())
    s_leaves, s_spec = sp.tree_flatten(_tree())
    assert s_leaves == t_leaves == [1, 2, 3, None, 4, 5, 6, 7, 8, 9]
    assert (s_spec.num_leaves, s_spec.num_nodes, s_spec.num_children) == (
        t_spec.num_leaves, t_spec.num_nodes, t_spec.num_children)
    rebuilt = sp.tree_unflatten([x * 10 if x else x for x in s_leaves], s_spec)
    expected = tp.tree_unflatten([x * 10 if x else x for x in t_leaves], t_spec)
    assert rebuilt == expected and type(rebuilt["p"]) is Point and rebuilt["dq"].maxlen == 4
    assert type(rebuilt["o"]) is collections.OrderedDict and rebuilt["dd"].default_factory is list
    assert sp.tree_structure(_tree()) == s_spec and sp.tree_structure(5).is_leaf() and tp.tree_structure(5).is_leaf()
    assert sp.tree_structure([1, 2]) != sp.tree_structure((1, 2))
    assert sp.tree_leaves(_tree()) == tp.tree_leaves(_tree())


def test_tree_map_and_friends_like_torch():
    tree = _tree()
    f = lambda x: None if x is None else x + 100  # noqa: E731
    assert sp.tree_map(f, tree) == tp.tree_map(f, tree)
    assert sp.tree_map(lambda a, b: (a, b), [1, (2, 3)], [4, (5, 6)]) == tp.tree_map(
        lambda a, b: (a, b), [1, (2, 3)], [4, (5, 6)])
    assert sp.tree_map_only(int, lambda x: -x, [1, "s", 2.5]) == tp.tree_map_only(int, lambda x: -x, [1, "s", 2.5])
    leaf_pairs = lambda x: isinstance(x, tuple)  # noqa: E731
    assert sp.tree_leaves([(1, 2), [3]], is_leaf=leaf_pairs) == tp.tree_leaves([(1, 2), [3]], is_leaf=leaf_pairs)
    assert sp.tree_all(lambda x: x > 0, [1, (2,)]) and not sp.tree_any(lambda x: x > 5, [1, (2,)])


def test_tensors_are_leaves_and_custom_nodes_register():
    x = sf.ones(2)
    leaves, spec = sp.tree_flatten({"w": x, "b": [x * 2]})
    assert leaves[0] is x and len(leaves) == 2

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    sp.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda xs, _: Pair(*xs))
    try:
        out = sp.tree_map(lambda v: v * 3, [Pair(1, 2)])
        assert (out[0].a, out[0].b) == (3, 6)
        with pytest.raises(ValueError, match="already registered"):
            sp.register_pytree_node(Pair, lambda p: ([], None), lambda xs, _: None)
    finally:
        del sp.SUPPORTED_NODES[Pair]


def test_unflatten_wrong_leaf_count_raises():
    _, spec = sp.tree_flatten([1, [2, 3]])
    with pytest.raises(ValueError, match="has length 2 but the spec refers to a pytree that holds 3"):
        sp.tree_unflatten([1, 2], spec)
    with pytest.raises(TypeError, match="Expected `treespec` to be instance of TreeSpec"):
        sp.tree_unflatten([1], [1])


def test_timer_timeit_and_blocked_autorange():
    from shardflow.utils import benchmark

    counter = {"n": 0}

    def work():
        counter["n"] += 1

    t = benchmark.Timer("work()", globals={"work": work}, label="calls", sub_label="py", description="work")
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.raw_times) == 1
    assert m.median == m.mean == m.raw_times[0] / 50 > 0
    assert counter["n"] >= 50  # the statement really ran
    m2 = benchmark.Timer("x = y * 2", setup="y = 3", label="calls", sub_label="mul").blocked_autorange(min_run_time=0.02)
    assert sum(m2.raw_times) >= 0.02 and m2.number_per_run >= 1 and len(m2.times) == len(m2.raw_times)
    assert m2.iqr >= 0 and m2.title == "calls: mul" and 1 <= m2.significant_figures <= 4
    assert "measurement" in repr(m2) and "calls: mul" in repr(m2)
    # torch's Measurement has the same fields and statistics
    tm = torch.utils.benchmark.Measurement(4, [0.4, 0.8], torch.utils.benchmark.TaskSpec("pass", "pass"))
    sm = benchmark.Measurement(4, [0.4, 0.8], benchmark.TaskSpec("pass", "pass"))
    for attr in ("times", "median", "mean", "iqr"):
        assert getattr(sm, attr) == pytest.approx(getattr(tm, attr)), attr


def test_compare_prints_a_table(capsys):
    from shardflow.utils import benchmark

    spec = lambda sub, desc: benchmark.TaskSpec("pass", "pass", label="add", sub_label=sub, description=desc)  # noqa: E731
    results = [benchmark.Measurement(1, [2e-6], spec("int", "v1")), benchmark.Measurement(1, [3e-6], spec("int", "v2")),
               benchmark.Measurement(1, [5e-6], spec("float", "v2"))]
    benchmark.Compare(results).print()
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("[") and " add " in lines[0]
    assert "v1" in lines[1] and "v2" in lines[1]
    row = next(line for line in lines if line.strip().startswith("int"))
    assert row.split("|")[1].strip() == "2.0" and row.split("|")[2].strip() == "3.0"  # as torch prints it
    assert "5.0" in next(line for line in lines if line.strip().startswith("float"))
    assert "Times are in microseconds (us)." in out
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        benchmark.Compare([1.0])


def test_key_paths_as_torch():
    """``tree_flatten_with_path`` / ``keystr`` / ``key_get`` / ``tree_map_with_path``: the paths
    and their text are torch's (dicts, lists, tuples, namedtuples, nested)."""
    import collections

    import torch.utils._pytree as tp

    import shardflow.utils._pytree as sp

    point = collections.namedtuple("point", "x y")
    tree = {"a": [1, (2, 3)], "b": point(4, [5]), "c": collections.OrderedDict(z=6), "d": None}
    t_pairs, _ = tp.tree_flatten_with_path(tree)
    s_pairs, _ = sp.tree_flatten_with_path(tree)
    assert [(tp.keystr(k), v) for k, v in t_pairs] == [(sp.keystr(k), v) for k, v in s_pairs]
    assert [repr(k) for k, _ in t_pairs] == [repr(k) for k, _ in s_pairs]
    for (kt, _), (ks, v) in zip(t_pairs, s_pairs):
        assert sp.key_get(tree, ks) == tp.key_get(tree, kt) == v
    assert (sp.tree_map_with_path(lambda kp, x, y: (sp.keystr(kp), x + y), {"a": [1, 2]}, {"a": [10, 20]})
            == tp.tree_map_with_path(lambda kp, x, y: (tp.keystr(kp), x + y), {"a": [1, 2]}, {"a": [10, 20]}))
    seen = []
    assert sp.tree_map_(seen.append, tree) is tree and seen == tp.tree_leaves(tree)
    for lib in (tp, sp):
        assert lib.tree_all_only(int, lambda x: x > 0, [1, "s", 2]) and not lib.tree_any_only(str, lambda x: x == "t", [1, "s"])
        assert lib.tree_is_leaf(1) and not lib.tree_is_leaf([1]) and lib.is_namedtuple(point)
