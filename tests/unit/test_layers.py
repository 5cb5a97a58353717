"""The package's layers import one way: no two of gymgate's top-level modules and packages import each other, not
even through an import inside a function or under TYPE_CHECKING (each hides a cycle without removing it)."""

from __future__ import annotations

import ast
from pathlib import Path

import gymgate

SRC = Path(gymgate.__file__).parent


def _unit(module: str) -> str:
    """The layer a module belongs to: `gymgate.verdict`, `gymgate.compare`, …"""
    return ".".join(module.split(".")[:2])


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every gymgate module a file imports, wherever the import statement stands."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                found.add(node.module)
    return {name for name in found if name.startswith("gymgate.")}


def layer_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        unit = _unit(_module_name(path))
        graph.setdefault(unit, set()).update(u for u in map(_unit, _imports(path)) if u != unit)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one layer (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_layers_import_each_other():
    graph = layer_graph()
    found = cycles(graph)
    shown = [
        " ⇄ ".join(group) + ": " + "; ".join(f"{a} → {sorted(graph[a] & set(group))}" for a in group) for group in found
    ]
    assert found == [], shown


def test_verdict_decides_without_compare():
    """compare/ asks verdict.py for categories; verdict.py reads a comparison through its own protocols."""
    assert "gymgate.compare" not in layer_graph()["gymgate.verdict"]


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
