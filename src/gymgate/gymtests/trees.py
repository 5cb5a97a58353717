"""A ref's whole Gym source tree, where its own tests live: a release's sdist (hashed: the pin's `[sdist]`, or the
index's entry for an unpinned version), a checkout's or a commit's tree as given. Wheels carry no core tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from gymgate.errors import InfraError
from gymgate.locations import cache_dir
from gymgate.locks import held
from gymgate.refs import index
from gymgate.refs.local import sha256_file
from gymgate.refs.source import KIND_GIT, KIND_INDEX, KIND_PIN, KIND_TREE, GymSource

UNPACK_LOCK_S = 300.0  # another run unpacking the same sdist


class NoTests(Exception):
    """The ref has no test tree gymgate can read (said why): its tests cannot run, which is reported, never passed."""


def sdist_of(source: GymSource) -> index.IndexFile:
    """The sdist a release's tests come from, with the hash it must have."""
    if source.kind == KIND_PIN:
        name, sha = source.extra.get("sdist_filename"), source.extra.get("sdist_sha256")
        if not name or not sha:
            raise NoTests(f"pins/{source.name}.toml names no [sdist] (filename, sha256)")
    else:
        name, sha = f"nemo_gym-{source.version}.tar.gz", ""
    found = [f for f in index.list_files() if f.filename == name]
    if not found:
        raise NoTests(f"{name} is not on the package index ({index.index_url()})")
    if sha and found[0].sha256 != sha:
        raise InfraError(
            f"hash mismatch for {name}: pins/{source.name}.toml says sha256:{sha}, the index sha256:{found[0].sha256}"
        )
    return found[0]


def source_tree(source: GymSource) -> Path:
    """The ref's source tree, read-only by contract (runs copy what they run from: gymgate.gymtests.overlay)."""
    if source.kind in (KIND_TREE, KIND_GIT):
        if source.path is None or not source.path.is_dir():
            raise NoTests(f"{source.name}: its source tree is gone ({source.path})")
        return source.path
    if source.kind not in (KIND_PIN, KIND_INDEX):
        raise NoTests(
            f"{source.name} is a {source.kind}: a wheel ships no tests of Gym's core; give its version or checkout"
        )
    sdist = sdist_of(source)
    tree = cache_dir() / "gymtrees" / sdist.sha256[:24]
    if tree.is_dir():
        return tree
    tree.parent.mkdir(parents=True, exist_ok=True)
    with held(tree.parent / f"{tree.name}.lock", UNPACK_LOCK_S, f"unpacking {sdist.filename}"):
        if tree.is_dir():
            return tree
        tarball = cache_dir() / "artifacts" / sdist.filename  # where index.cached_sdist keeps it too
        if not tarball.is_file() or sha256_file(tarball) != sdist.sha256:
            index.download(sdist, tarball)
        scratch = Path(tempfile.mkdtemp(prefix=f".{tree.name}.", dir=tree.parent))
        try:
            index.unpack_sdist(tarball, scratch)
            os.replace(scratch, tree)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return tree
