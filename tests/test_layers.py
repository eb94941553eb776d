"""The package's layout, as issue 21 wrote it down: stage subpackages whose imports go one
way (the import-linter layers contract in pyproject.toml), no import cycle anywhere, a small
top level, no module past 600 lines, a docstring saying what each subpackage holds, and
imports inside functions only where they keep start-up fast (and say so)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gradgen"
STAGES = ("ir", "rules", "analysis", "frontend", "transform", "codegen", "verify", "tools")


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_layers_contract_is_kept():
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def _cycles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycle_anywhere():
    graph = grimp.build_graph("gradgen", include_external_packages=False)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_stage_subpackages_and_a_small_top_level():
    packages = [p.parent.name for p in PACKAGE.glob("*/__init__.py")]
    assert set(STAGES) <= set(packages) and len(packages) >= 6
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


@pytest.mark.parametrize("package", [p.parent for p in sorted(PACKAGE.rglob("__init__.py")) if p.parent != PACKAGE],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_subpackage_says_what_it_holds(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    assert doc and len(doc.split()) >= 30, package
    for module in package.glob("*.py"):  # and names each of its modules
        if module.stem != "__init__" and not module.stem.startswith("_"):
            assert module.stem in doc, (package.name, module.stem)


def test_no_module_past_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}


def test_imports_inside_functions_only_for_start_up():
    """An import inside a function keeps start-up fast (sympy, black, the CLI's stages, the
    compiler behind a cached module) and says so on its line; any other goes at the top."""
    found = []
    for path in _modules():
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)) and "start-up" not in lines[sub.lineno - 1]:
                        found.append(f"{path.relative_to(ROOT)}:{sub.lineno}")
    assert found == []


def test_one_walk_over_expressions():
    """Walks over IR expressions use gradgen.ir.nodes.subexpressions (with their own `into`
    where they follow only some children): no other module keeps a stack of them."""
    import re

    hand_written = re.compile(r"stack\.(extend|append)\(\(?\w+\.(args|test)")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in _modules() if p != PACKAGE / "ir" / "nodes.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if hand_written.search(line)]
    assert found == []


def test_the_guide_names_every_module():
    """docs/how-it-works.md's table of modules is the package: a module added or renamed is
    named there (`gradgen/<package>/<module>.py`, or a later module of the same row)."""
    import re

    text = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `gradgen/")]
    named = set()
    for row in rows:
        cell = row.split("|")[1]
        paths = re.findall(r"`([\w/]+\.py)`", cell)
        folder = paths[0].rsplit("/", 1)[0]
        named |= {p if "/" in p else f"{folder}/{p}" for p in paths}
    modules = {str(p.relative_to(ROOT)) for p in _modules() if p.name != "__init__.py" or p.parent == PACKAGE}
    assert modules - named == set() and named - modules == set()
