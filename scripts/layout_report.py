"""The layout report of issue 22: lines per package, import circles, longest functions.

    python scripts/layout_report.py [ROOT]      # ROOT: a checkout (default: this one)

* Lines: non-blank lines of the ``.py`` files of each top-level package of ``shardflow/``.
* Import circles: the strongly connected components (more than one module) of the graph
  "module A imports module B at import time" (module-level ``import`` / ``from`` statements,
  not those inside functions, which run later), read with ``ast``. An import of a package
  that contains the importer is not an edge (that package is already being imported).
  Counted twice: module-level imports only, then with the deferred imports inside functions
  too (a circle broken only by deferring an import is still two modules that need each other).
* Longest functions: the ten longest ``def`` bodies (lines from ``def`` to the last line).

Repeated blocks are counted by the tool library's ``duplicates --repo ROOT/shardflow``.
"""

from __future__ import annotations

import ast
import os
import sys
from collections import defaultdict


def modules(root: str) -> dict[str, str]:
    """``{dotted module name: path}`` for every .py file under ``root/shardflow``."""
    out = {}
    base = os.path.join(root, "shardflow")
    for dirpath, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # generated code (jit's fused kernels)
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def _resolve(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = mod.split(".")
    if not is_pkg:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def import_graph(mods: dict[str, str], deferred: bool = False) -> dict[str, set[str]]:
    """Edges of module-level imports; with ``deferred`` also of imports inside functions."""
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in mods.items():
        tree = ast.parse(open(path, encoding="utf-8").read())
        is_pkg = path.endswith("__init__.py")
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)] \
            if deferred else tree.body
        for node in nodes:  # module level: what runs at import
            stmts = [node]
            if isinstance(node, ast.If | ast.Try):  # `if TYPE_CHECKING:` / try-import blocks
                stmts = [n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)]
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    continue
            for s in stmts:
                targets = []
                if isinstance(s, ast.Import):
                    targets = [a.name for a in s.names]
                elif isinstance(s, ast.ImportFrom):
                    base = _resolve(mod, is_pkg, s.level, s.module)
                    targets = [base] + [f"{base}.{a.name}" for a in s.names]
                for t in targets:
                    # a package that contains ``mod`` is being imported already when ``mod``
                    # runs (``from .. import x``): not an edge of a circle
                    if t in mods and t != mod and not mod.startswith(t + "."):
                        graph[mod].add(t)
    return graph


def circles(graph: dict[str, set[str]], nodes) -> list[list[str]]:
    """Tarjan's strongly connected components of size > 1 (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def longest_functions(mods: dict[str, str], root: str, k: int = 10):
    found = []
    for path in mods.values():
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((node.end_lineno - node.lineno + 1, os.path.relpath(path, root), node.name))
    return sorted(found, reverse=True)[:k]


def main(argv: list[str]) -> int:
    root = os.path.abspath(argv[0] if argv else os.path.join(os.path.dirname(__file__), ".."))
    mods = modules(root)
    lines: dict[str, int] = defaultdict(int)
    for mod, path in mods.items():
        parts = mod.split(".")
        pkg = parts[1] if len(parts) > 2 or (len(parts) == 2 and os.path.isdir(
            os.path.join(root, "shardflow", parts[1]))) else "(top-level files)"
        with open(path, encoding="utf-8") as f:
            lines[pkg] += sum(1 for line in f if line.strip())
    print(f"{root}: {len(mods)} modules, {sum(lines.values())} non-blank lines")
    for pkg, n in sorted(lines.items(), key=lambda kv: -kv[1]):
        print(f"  {pkg:24s} {n:7d}")
    for deferred in (False, True):
        comps = circles(import_graph(mods, deferred), sorted(mods))
        what = "all imports, deferred ones inside functions too" if deferred else "module-level imports"
        print(f"import circles ({what}): {len(comps)}")
        for c in comps:
            print(f"  ({len(c)}) " + " <-> ".join(c))
    print("longest functions:")
    for n, path, name in longest_functions(mods, root):
        print(f"  {n:4d}  {path}:{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
