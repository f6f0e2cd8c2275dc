"""No import cycle in the shipped package, and no function-local import used to hide one.

Every module of ``layers/autoscaler/autoscaler`` is parsed with ``ast``; each ``import`` / ``from ... import`` of an
``autoscaler`` module is an edge, whether it sits at module level or inside a function (a lazy import), except
those under ``if TYPE_CHECKING:``, which never run. Importing ``a.b.c`` also runs the ``__init__`` of ``a.b``
first, so that package is an edge too (unless the importer lives inside it: its package is loaded already). One
acyclic graph then proves both: a cycle between module-level imports would fail at import time or depend on
import order, and a function-local import that closes a cycle is the usual way of hiding one. Lazy imports of
third-party modules, or of a package outside the shipped one, are not edges, so heavy dependencies may still be
imported late.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "layers" / "autoscaler" / "autoscaler"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    local: bool  # inside a function or method
    parent: bool = False  # the package of an imported submodule: Python runs its ``__init__`` first

    def __str__(self) -> str:
        where = "function-local" if self.local else "module-level"
        how = ", its package's __init__" if self.parent else ""
        return f"{self.source} -> {self.target} (line {self.line}, {where}{how})"


def modules(root: Path, package: str) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file under ``root`` (a package's ``__init__`` is the package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import that can run, with whether it is inside a function; ``if TYPE_CHECKING:`` bodies skipped."""

    def walk(node: ast.AST, local: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, local
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    yield from walk(ast.Module(body=[other], type_ignores=[]), local)
            else:
                inside = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                yield from walk(child, inside)

    yield from walk(tree, False)


def _known(name: str, known: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def import_edges(root: Path, package: str) -> list[Edge]:
    known = modules(root, package)
    edges = []
    for module, path in known.items():
        here = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node, local in _imports(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from a import b``: the submodule a.b when there is one, else a itself
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
            for target in targets:
                if target != package and not target.startswith(f"{package}."):
                    continue  # a third-party or separate package: not an edge of this graph
                resolved = _known(target, known)
                if resolved is None or resolved == module:
                    continue
                edges.append(Edge(module, resolved, node.lineno, local))
                # Importing a.b.c runs the __init__ of a.b first, unless the importer lives inside a.b already.
                parents = resolved.split(".")[1:-1]
                for depth in range(len(parents)):
                    parent = ".".join([package, *parents[: depth + 1]])
                    if parent in known and not f"{module}.".startswith(f"{parent}."):
                        edges.append(Edge(module, parent, node.lineno, local, parent=True))
    return edges


def find_cycle(edges: list[Edge]) -> list[Edge] | None:
    """One cycle of the graph as its edges, or None when the graph is acyclic (depth-first search)."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    done: set[str] = set()
    path: list[Edge] = []
    on_path: dict[str, int] = {}  # module -> index in ``path`` of the edge leaving it

    def visit(module: str) -> list[Edge] | None:
        on_path[module] = len(path)
        for edge in graph.get(module, ()):
            if edge.target in on_path:
                return [*path[on_path[edge.target] :], edge]
            if edge.target not in done:
                path.append(edge)
                cycle = visit(edge.target)
                if cycle is not None:
                    return cycle
                path.pop()
        del on_path[module]
        done.add(module)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)) is not None:
            return cycle
    return None


def describe(cycle: list[Edge]) -> str:
    return "import cycle:\n  " + "\n  ".join(str(edge) for edge in cycle)


# --- the shipped package -----------------------------------------------------------------------------------


def test_the_shipped_package_has_no_import_cycle_not_even_through_function_local_imports() -> None:
    edges = import_edges(PACKAGE_ROOT, "autoscaler")
    assert any(e.local for e in edges) and any(not e.local for e in edges)  # both kinds are collected
    cycle = find_cycle(edges)
    assert cycle is None, describe(cycle)


# --- the check itself, on small packages ---------------------------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_a_cycle_closed_by_a_function_local_import_is_found(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "a.py": "from pkg.b import helper\n",
            "b.py": "def helper():\n    from pkg import a  # dodging the cycle\n    return a\n",
        },
    )
    cycle = find_cycle(import_edges(package, "pkg"))
    assert cycle is not None
    assert [(e.source, e.target, e.local) for e in cycle] == [("pkg.a", "pkg.b", False), ("pkg.b", "pkg.a", True)]
    assert "pkg.b -> pkg.a (line 2, function-local)" in describe(cycle)


def test_a_cycle_through_a_package_init_and_relative_imports_is_found(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "sub/__init__.py": "from .x import X\n",
            "sub/x.py": "from ..y import Y\nX = Y\n",
            "y.py": "import pkg.sub\nY = 1\n",
        },
    )
    cycle = find_cycle(import_edges(package, "pkg"))
    assert cycle is not None
    assert {e.source for e in cycle} == {"pkg.sub", "pkg.sub.x", "pkg.y"}


def test_a_cycle_through_the_package_of_an_imported_submodule_is_found(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "a/__init__.py": "from pkg.a.impl import run\n",
            "a/impl.py": "def run():\n    from pkg.b.tool import tool  # runs pkg/b/__init__.py first\n",
            "b/__init__.py": "from pkg.b.heavy import heavy\n",
            "b/heavy.py": "from pkg.a import run as heavy\n",
            "b/tool.py": "tool = 1\n",
        },
    )
    cycle = find_cycle(import_edges(package, "pkg"))
    assert cycle is not None, "b.tool alone makes no cycle: the package b does"
    assert any(e.parent and e.target == "pkg.b" for e in cycle), describe(cycle)


def test_type_checking_imports_and_other_packages_are_not_edges(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "a.py": "from typing import TYPE_CHECKING\nimport pkg.b\nif TYPE_CHECKING:\n    from pkg import c\n",
            "b.py": "def later():\n    import json\n    import pkgdev.world\n",
            "c.py": "import pkg.a\n",
        },
    )
    edges = import_edges(package, "pkg")
    assert [(e.source, e.target) for e in edges] == [("pkg.a", "pkg.b"), ("pkg.c", "pkg.a")]
    assert find_cycle(edges) is None
