"""The tree a suite runs in: one ref's code with another ref's tests laid over it (or a ref's own, unchanged), in a
scratch folder the run owns. Test side: each root's `tests/` folder, the `conftest.py` files above it, and the pytest
configuration (the tests' ref's pyproject.toml); everything else is the code's ref."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gymgate.errors import InfraError
from gymgate.gymtests.roots import Root

COPY_TIMEOUT_S = 300.0
CONFIG_DIR = ".gymgate-tests"  # in the scratch tree: the tests' ref's pytest configuration


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts
    return ["/".join(parts[:i]) for i in range(len(parts) + 1)]


def _replace(source: Path, target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    elif source.is_file():
        shutil.copy2(source, target)


def _copy_code(code_tree: Path, into: Path) -> None:
    """The code's whole tree (tests read anywhere in it: docs, data, configs), copied (`cp -a`: fast for thousands
    of files), so nothing a test writes reaches the cached tree."""
    into.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["cp", "-a", str(code_tree), str(into)], capture_output=True, text=True, timeout=COPY_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise InfraError(f"cannot copy {code_tree} to {into}: {done.stderr.strip()[-500:]}")


def build(code_tree: Path, tests_tree: Path, roots: Sequence[Root], into: Path) -> Path:
    """`into` holding `code_tree` with `tests_tree`'s tests of `roots`; returns the pytest configuration to use. A
    root whose server the code's ref does not have stays absent (its tests are judged so)."""
    _copy_code(code_tree, into)
    if tests_tree != code_tree:
        for root in roots:
            if not (into / root.path).is_dir():
                continue
            (into / root.tests).parent.mkdir(parents=True, exist_ok=True)
            _replace(tests_tree / root.tests, into / root.tests)
            for folder in _ancestors(root.path):
                conftest = Path(folder) / "conftest.py" if folder else Path("conftest.py")
                _replace(tests_tree / conftest, into / conftest)
    config = into / CONFIG_DIR / "pyproject.toml"
    config.parent.mkdir()
    shutil.copy2(tests_tree / "pyproject.toml", config)
    return config
