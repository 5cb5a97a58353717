"""gymgate imports one way: no two of its modules import each other, nor do two of its packages (a package counts
every module below it, at every depth: `gymgate.cases`, `gymgate.services.launcher`), nor two top-level layers — not
even through an import inside a function or under TYPE_CHECKING (each hides a cycle without removing it)."""

from __future__ import annotations

import ast
from pathlib import Path

import gymgate

SRC = Path(gymgate.__file__).parent


def modules_below(package: Path) -> dict[str, Path]:
    """Every module of `package` (a folder named gymgate) by its dotted name."""
    named = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        named[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return named


MODULES = modules_below(SRC)


def _known(name: str, modules: dict[str, Path]) -> str:
    """The gymgate module `name` lives in (an imported name's module), '' when it is not gymgate's."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every gymgate module a file imports, wherever the import statement stands: `from gymgate.a import b` counts
    as gymgate.a.b when b is a module of its own, else as gymgate.a."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(_known(a.name, modules) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                named = f"{origin}.{alias.name}"
                found.add(named if named in modules else _known(origin, modules))
    return {name for name in found if name.startswith("gymgate") and name != module}


def module_graph(modules: dict[str, Path] = MODULES) -> dict[str, set[str]]:
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _within(module: str, depth: int) -> str:
    """The package (or top-level module) of `depth` dotted parts `module` belongs to."""
    return ".".join(module.split(".")[:depth])


def package_graph(depth: int) -> dict[str, set[str]]:
    """Packages of `depth` dotted parts (gymgate.X at 2), each counting every module below it; modules of that depth
    stand for themselves. Imports within one such package are its own business (module_graph judges them)."""
    graph: dict[str, set[str]] = {}
    for module, imported in module_graph().items():
        if len(module.split(".")) < depth:
            continue
        unit = _within(module, depth)
        found = {_within(other, depth) for other in imported if len(other.split(".")) >= depth}
        graph.setdefault(unit, set()).update(found - {unit})
    return graph


def layer_graph() -> dict[str, set[str]]:
    return package_graph(2)


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


def _shown(graph: dict[str, set[str]], found: list[list[str]]) -> list[str]:
    return [
        " ⇄ ".join(group) + ": " + "; ".join(f"{a} → {sorted(graph[a] & set(group))}" for a in group) for group in found
    ]


def test_no_two_modules_import_each_other():
    graph = module_graph()
    found = cycles(graph)
    assert found == [], _shown(graph, found)


def test_no_two_packages_import_each_other_at_any_depth():
    deepest = max(len(name.split(".")) for name in MODULES)
    for depth in range(2, deepest):
        graph = package_graph(depth)
        found = cycles(graph)
        assert found == [], _shown(graph, found)


def test_verdict_decides_without_compare():
    """compare/ asks verdict.py for categories; verdict.py reads a comparison through its own protocols."""
    assert "gymgate.compare" not in layer_graph()["gymgate.verdict"]


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_inside_a_function_counts(tmp_path):
    """Two modules of one package, one importing the other at its top and the other importing back inside a
    function, are a cycle; and `from gymgate.pkg import mod` counts as gymgate.pkg.mod."""
    package = tmp_path / "gymgate" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from gymgate.pkg import b\n")
    (package / "b.py").write_text("def f():\n    from gymgate.pkg.a import g\n")
    assert cycles(module_graph(modules_below(tmp_path / "gymgate"))) == [["gymgate.pkg.a", "gymgate.pkg.b"]]


def test_every_import_inside_a_function_says_why():
    """gymgate imports at the top of a module (ruff's PLC0415); the few imports that must wait say why on their
    line: the pin environment only (Ray, Gym, numpy: the harness has none of them), or the command line's start-up."""
    import re

    unexplained = []
    for module, path in MODULES.items():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            marked = re.search(r"noqa: [A-Z0-9, ]*PLC0415(?P<why>.*)$", line)
            if marked and not re.match(r"\s*-\s*\S.{8,}", marked.group("why")):
                unexplained.append(f"{module}:{number}: {line.strip()}")
    assert unexplained == []
