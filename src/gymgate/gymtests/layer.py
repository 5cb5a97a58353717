"""The test-only layer: what Gym's own tests need beyond a ref's environment (layer.txt, hash-locked), installed once
per interpreter into gymgate's cache and put on the tests' PYTHONPATH. The ref's cached environment is never edited."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from gymgate.envs.project import uv_env
from gymgate.errors import BuildError
from gymgate.locations import cache_dir
from gymgate.locks import held

LOCK_FILE = Path(__file__).with_name("layer.txt")
INSTALL_TIMEOUT_S = 300.0
LOCK_WAIT_S = 600.0


def layer_digest(python_version: str) -> str:
    """What decides the layer's contents: its lock and the interpreter's version."""
    return hashlib.sha256(LOCK_FILE.read_bytes() + b"\0" + python_version.encode()).hexdigest()[:20]


def layer_for(python: Path, python_version: str) -> Path:
    """The layer for this interpreter, installed (from the package index, hashes required) the first time."""
    target = cache_dir() / "gymtest-layers" / layer_digest(python_version)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with held(target.parent / f"{target.name}.lock", LOCK_WAIT_S, "installing Gym's test layer"):
        if target.is_dir():
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        args = [shutil.which("uv") or "uv", "pip", "install", "--target", str(scratch), "--python", str(python)]
        args += ["--no-deps", "--require-hashes", "--only-binary", ":all:", "-r", str(LOCK_FILE)]
        try:
            done = subprocess.run(
                args, env=uv_env(), capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
            )
            if done.returncode != 0:
                raise BuildError(f"installing Gym's test layer ({LOCK_FILE}) failed:\n{done.stderr[-2000:]}")
            os.replace(scratch, target)
        except subprocess.TimeoutExpired as exc:
            raise BuildError(f"installing Gym's test layer took over {INSTALL_TIMEOUT_S:g} s") from exc
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target
