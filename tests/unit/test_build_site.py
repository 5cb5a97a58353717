"""The build backend's sitecustomize (envs/buildsite/): it memoizes os.path.realpath and nothing else — the build
sees the sys.path it would have seen and the interpreter's own sitecustomize still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gymgate.envs.sync import BUILD_SITE

PROBE = """
import functools, json, os, sys
print(json.dumps({
    "memoized": isinstance(os.path.realpath, functools._lru_cache_wrapper),
    "realpath": os.path.realpath(sys.argv[1]),
    "on_path": any(os.path.abspath(p or ".") == sys.argv[2] for p in sys.path),
    "theirs": "theirs_marker" in sys.modules,
}))
"""


def _probe(pythonpath: list[str], link: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
    out = subprocess.run(
        [sys.executable, "-c", PROBE, link, str(BUILD_SITE)], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_realpath_is_memoized_and_still_right_and_the_folder_leaves_sys_path(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    seen = _probe([str(BUILD_SITE)], str(tmp_path / "link"))
    assert seen["memoized"] and seen["realpath"] == str(tmp_path / "real")
    assert not seen["on_path"]
    plain = _probe([], str(tmp_path / "link"))
    assert not plain["memoized"] and plain["realpath"] == seen["realpath"]


def test_the_interpreters_own_sitecustomize_still_runs(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(
        "import sys, types\nsys.modules['theirs_marker'] = types.ModuleType('m')\n"
    )
    (tmp_path / "real").mkdir()
    seen = _probe([str(BUILD_SITE), str(theirs)], str(tmp_path / "real"))
    assert seen["memoized"] and seen["theirs"]
