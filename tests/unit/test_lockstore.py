"""A tree's lock is reused for a project like it only when real uv accepts it offline; a tree whose requirements
differ, a project without an editable tree, or a project that has its lock already is locked as before."""

from __future__ import annotations

import sys
from pathlib import Path

import tomli_w

from gymgate.envs import lockstore
from gymgate.envs.project import lock
from gymgate.envs.python import Interpreter

INTERP = Interpreter(Path(sys.executable), ".".join(map(str, sys.version_info[:3])), "CPython")


def _tree(root: Path, dependencies: list[str] | None = None) -> Path:
    """A Gym tree with static metadata: uv reads it without building (and without the index)."""
    root.mkdir(parents=True)
    project = {"project": {"name": "nemo-gym", "version": "1.0", "dependencies": dependencies or []}}
    (root / "pyproject.toml").write_text(tomli_w.dumps(project))
    return root


def _project(where: Path, tree: Path, name: str, editable: bool = True) -> Path:
    """What envs/project.py renders for a tree: the tree editable, gymgate's notes that name it."""
    where.mkdir(parents=True)
    gym = {"path": str(tree), "editable": True} if editable else {"path": str(tree)}
    data = {
        "project": {"name": name, "version": "0", "requires-python": ">=3.11", "dependencies": ["nemo-gym"]},
        "tool": {
            "uv": {"package": False, "sources": {"nemo-gym": gym}},
            "gymgate": {"gym-ref": name, "gym-digest": name * 2},
        },
    }
    (where / "pyproject.toml").write_text(tomli_w.dumps(data))
    return where


def _locked(where: Path) -> Path:
    lock(where, INTERP)
    lockstore.keep(where, INTERP)
    return where


def test_a_project_like_a_locked_one_takes_its_lock_exactly_as_uv_would_write_it(tmp_path, cache):
    _locked(_project(tmp_path / "a", _tree(tmp_path / "tree-a"), "gymgate-env-tree-a"))
    b = _project(tmp_path / "b", _tree(tmp_path / "tree-b"), "gymgate-env-tree-b")
    assert lockstore.seed(b, INTERP)
    fresh = _locked(_project(tmp_path / "fresh", tmp_path / "tree-b", "gymgate-env-tree-b"))
    assert (b / "uv.lock").read_text() == (fresh / "uv.lock").read_text()
    assert "tree-a" not in (b / "uv.lock").read_text()


def test_a_tree_whose_requirements_differ_is_refused_and_leaves_no_lock(tmp_path, cache):
    _locked(_project(tmp_path / "a", _tree(tmp_path / "tree-a"), "gymgate-env-tree-a"))
    # The project files are alike; the tree asks for one more requirement: uv's offline check refuses the lock.
    c = _project(tmp_path / "c", _tree(tmp_path / "tree-c", ["nemo-gym-no-such-dependency"]), "gymgate-env-tree-c")
    assert not lockstore.seed(c, INTERP)
    assert not (c / "uv.lock").exists()


def test_only_projects_of_editable_trees_without_a_lock_are_seeded(tmp_path, cache):
    wheel_like = _locked(_project(tmp_path / "w", _tree(tmp_path / "tree-w"), "gymgate-env-w", editable=False))
    assert not (cache / "locks").exists()  # a non-editable Gym: its lock is its own, nothing stored
    assert not lockstore.seed(_project(tmp_path / "w2", _tree(tmp_path / "tree-w2"), "w2", editable=False), INTERP)
    assert (wheel_like / "uv.lock").is_file()

    _locked(_project(tmp_path / "a", _tree(tmp_path / "tree-a"), "gymgate-env-tree-a"))
    own = _project(tmp_path / "d", _tree(tmp_path / "tree-d"), "gymgate-env-tree-d")
    (own / "uv.lock").write_text("# its own\n")
    assert not lockstore.seed(own, INTERP)
    assert (own / "uv.lock").read_text() == "# its own\n"  # untouched
