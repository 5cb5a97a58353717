"""Building Gym's editable wheel with envs/buildsite/ on the build backend's path changes how long it takes,
never what is installed: the real 0.4.0 tree installed editable both ways, byte for byte the same files."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gymgate.envs.project import uv_env
from gymgate.envs.python import select
from gymgate.envs.sync import BUILD_SITE
from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack


def _install_editable(tree: Path, venv: Path, python: Path, **env: str) -> dict[str, bytes]:
    subprocess.run(["uv", "venv", "-q", str(venv), "--python", str(python)], env=uv_env(), check=True, timeout=120)
    done = subprocess.run(
        ["uv", "pip", "install", "--python", str(venv / "bin" / "python"), "--no-deps", "--refresh-package", "nemo-gym"]
        + ["-e", str(tree)],  # --python: under nox, uv would otherwise pick the session's own environment
        env=uv_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Built nemo-gym" in done.stderr  # built here, not taken from uv's cache
    (site,) = venv.glob("lib/python*/site-packages")
    files = [f for f in site.rglob("*") if f.is_file() and "nemo_gym" in f.relative_to(site).as_posix()]
    return {f.relative_to(site).as_posix(): f.read_bytes() for f in files}


def test_the_editable_wheel_is_the_same_with_and_without_the_build_site(tmp_path):
    tree = tmp_path / "gym"
    unpack(sdist("0.4.0"), tree)
    python = select(">=3.12", "the test").path
    venv = tmp_path / "venv"  # one place for both: the scripts' shebangs (and so RECORD's hashes) name it
    plain = _install_editable(tree, venv, python)
    shutil.rmtree(venv)
    fast = _install_editable(tree, venv, python, PYTHONPATH=str(BUILD_SITE))
    assert any(name.startswith("__editable___nemo_gym") for name in plain)  # the finder that maps Gym's packages
    assert plain.keys() == fast.keys() and all(plain[k] == fast[k] for k in plain), sorted(
        k for k in plain if plain.get(k) != fast.get(k)
    )
    assert os.fsencode(str(tree)) in b"".join(plain.values())  # the finder points at this tree
