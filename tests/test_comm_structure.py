"""Structure checks that import-linter cannot express (issue 22):

* no import cycle among the modules of ``shardflow/comm``, counting the imports made inside
  functions (the lazy ones are how cycles hide);
* no module of ``shardflow`` imports or names a test double (``tests/doubles``): production
  code takes them through its injection points (``backend.xp.set_cuda_array_module``,
  ``comm.nccl_lib.set_cuda_api``) and knows nothing else of them. Docstrings may point at
  where the tests live.
"""

import ast
from pathlib import Path

import shardflow

ROOT = Path(shardflow.__file__).parent
DOUBLES = ("host_cupy", "fake_nccl", "cupy_names", "FakeNccl", "FakeCudaAPI", "HostCudaAPI",
           "over_control", "tests.doubles")


def import_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """``module -> modules of the same folder it imports`` (every import, lazy ones too)."""
    modules = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module.removeprefix(package + ".")] if node.module.startswith(
                    package + ".") else []
            elif isinstance(node, ast.Import):
                names = [a.name.removeprefix(package + ".") for a in node.names
                         if a.name.startswith(package + ".")]
            else:
                continue
            targets |= {n.split(".")[0] for n in names} & modules
        graph[path.stem] = targets - {path.stem}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_comm_has_no_import_cycle():
    graph = import_graph(ROOT / "comm", "shardflow.comm")
    assert cycles(graph) == [], {m: sorted(t) for m, t in graph.items()}
    assert graph["failure"] <= {"base"}, graph["failure"]  # the policy imports no backend


def test_the_cycle_check_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def _code_without_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            body[0] = ast.Pass()
    return ast.unparse(tree)


def names_a_double(source: str) -> list[str]:
    # Taking docstrings out only removes text, and an import of tests names "tests": a source
    # without any of these strings has nothing to find, unparsed (CI time: 5.9 s -> 0.3 s for
    # the whole package, which parsing and unparsing every module cost)
    if not any(d in source for d in (*DOUBLES, "tests")):
        return []
    tree = ast.parse(source)
    imports_tests = any(
        (isinstance(n, ast.Import) and any(a.name.split(".")[0] == "tests" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == "tests")
        for n in ast.walk(tree))
    code = _code_without_docstrings(tree)  # after the walk above: it changes the tree
    return [d for d in DOUBLES if d in code] + (["import tests"] if imports_tests else [])


def test_production_code_knows_no_test_double():
    offenders = {}
    for path in ROOT.rglob("*.py"):
        found = names_a_double(path.read_text())
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert not offenders, f"shardflow modules that name test doubles: {offenders}"


def test_the_double_check_can_fail():
    assert names_a_double("if getattr(make, 'over_control', False):\n    pass\n") == ["over_control"]
    assert names_a_double("from tests.doubles import host_cupy\n") == [
        "host_cupy", "tests.doubles", "import tests"]
    assert names_a_double('"""Tested against tests/doubles/host_cupy.py."""\nx = 1\n') == []
