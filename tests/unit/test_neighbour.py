"""Building an environment from its nearest neighbour (envs/neighbour.py): which neighbour, and that copying it
never changes it."""

from __future__ import annotations

import json

from gymgate.envs import neighbour

MARK = ".mark.json"
MARKS = {"format": "2", "interpreter": "/usr/bin/python3.12", "checkout": "/src/gymgate"}


def _lock(**versions: str) -> str:
    return "version = 1\n" + "".join(f'[[package]]\nname = "{n}"\nversion = "{v}"\n\n' for n, v in versions.items())


def _env(envs, key, lock_text, **marks):
    path = envs / key
    (path / "bin").mkdir(parents=True)
    (path / MARK).write_text(json.dumps({**MARKS, **marks, neighbour.LOCKED: neighbour.locked(lock_text)}))
    (path / neighbour.LOCK_COPY).write_text(lock_text)
    return path


def test_the_nearest_matching_neighbour_within_reach_is_chosen(tmp_path):
    envs = tmp_path / "envs"
    base = {f"p{i}": "1.0" for i in range(20)}
    lock = tmp_path / "uv.lock"
    lock.write_text(_lock(**base, **{"nemo-gym": "0.4.1"}))
    assert neighbour.find(envs, lock, MARKS, MARK) is None  # nothing built yet
    _env(envs, "far", _lock(**{f"p{i}": "2.0" for i in range(20)}))  # 21 packages differ: not worth copying
    _env(envs, "near", _lock(**base, **{"nemo-gym": "0.4.0"}))
    _env(envs, "nearer-but-other-python", _lock(**base, **{"nemo-gym": "0.4.1"}), interpreter="/usr/bin/python3.13")
    _env(envs, "two-away", _lock(**{**base, "p0": "1.1"}, **{"nemo-gym": "0.4.0"}))
    (envs / "half-built" / "bin").mkdir(parents=True)  # no mark: never a neighbour
    older = _env(envs, "older", _lock(**base, **{"nemo-gym": "0.4.1"}))
    (older / MARK).write_text(json.dumps(MARKS))  # a mark without its lock's packages: not measurable, skipped
    found = neighbour.find(envs, lock, MARKS, MARK)
    assert (found.key, found.changed) == ("near", ["nemo-gym"])


def test_a_copy_points_its_scripts_at_itself_and_leaves_the_neighbour_as_it_was(tmp_path):
    envs = tmp_path / "envs"
    near = _env(envs, "near", _lock(a="1"))
    script = near / "bin" / "tool"
    script.write_text(f"#!{near}/bin/python\nprint('hi')\n")
    script.chmod(0o755)
    (near / "bin" / "python").symlink_to("/usr/bin/python3")
    (near / "lib.py").write_text("x = 1\n")
    new = envs / "new"
    neighbour.copy_env(near, new, MARK)
    assert (new / "bin" / "tool").read_text() == f"#!{new}/bin/python\nprint('hi')\n"
    assert (new / "bin" / "tool").stat().st_mode & 0o777 == 0o755
    assert script.read_text() == f"#!{near}/bin/python\nprint('hi')\n"  # the neighbour's own script is untouched
    assert (new / "lib.py").stat().st_ino == (near / "lib.py").stat().st_ino  # the rest is shared, not copied
    assert not (new / MARK).exists() and not (new / neighbour.LOCK_COPY).exists()  # incomplete until marked


def test_a_copy_missing_a_file_its_distributions_installed_is_not_trusted(tmp_path):
    """A copy is checked against its distributions' RECORDs (bytecode and scripts outside site-packages aside):
    a hole is named, so the build syncs from scratch instead of passing it on."""
    from gymgate.envs.neighbour import missing_files

    site = tmp_path / "env" / "lib" / "python3.13" / "site-packages"
    (site / "pytest-9.2.0.dist-info").mkdir(parents=True)
    (site / "py.py").write_text("")
    (site / "pytest" / "__pycache__").mkdir(parents=True)
    (site / "pytest" / "__init__.py").write_text("")
    rows = ["py.py,sha256=x,1", "pytest/__init__.py,sha256=y,1", "pytest/__pycache__/__init__.cpython-313.pyc,,",
            "../../../bin/pytest,sha256=z,1", "pytest-9.2.0.dist-info/RECORD,,"]  # fmt: skip
    (site / "pytest-9.2.0.dist-info" / "RECORD").write_text("\n".join(rows) + "\n")
    assert missing_files(tmp_path / "env") == []
    (site / "py.py").unlink()
    assert missing_files(tmp_path / "env") == ["py.py"]
