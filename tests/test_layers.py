"""Layering checks that import-linter cannot express: below the top layers (models, cli,
bench, testing), no module imports the root package ``shardflow`` (which re-exports every
layer and would hide an upward import)."""

import ast
from pathlib import Path

import shardflow

TOP = {"models", "cli", "bench", "testing"}
ROOT = Path(shardflow.__file__).parent


def _imports_root(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "shardflow" for a in node.names):
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "shardflow":
            lines.append(node.lineno)
    return lines


def test_lower_layers_do_not_import_the_root_package():
    offenders = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if len(rel.parts) == 1 or rel.parts[0] in TOP:
            continue
        lines = _imports_root(ast.parse(path.read_text()))
        offenders += [f"{rel}:{n}" for n in lines]
    assert not offenders, "modules below the top layers import `shardflow` itself: " + ", ".join(offenders)


def test_the_check_can_fail():
    assert _imports_root(ast.parse("import shardflow as torch\n")) == [1]
    assert _imports_root(ast.parse("from shardflow import nn\n")) == [1]
    assert _imports_root(ast.parse("from shardflow.nn import Linear\n")) == []
