"""Reading files out of a Gym distribution (index artifact, wheel or tree) without installing it."""

from __future__ import annotations

import zipfile
from pathlib import Path

from gymgate.errors import InfraError
from gymgate.locations import cache_dir
from gymgate.refs import index
from gymgate.refs.local import sha256_file
from gymgate.refs.source import KIND_GIT, KIND_INDEX, KIND_PIN, KIND_TREE, KIND_WHEEL, GymSource


class Distribution:
    """Read access to a Gym's files by their path inside the installed package (site-packages layout)."""

    def __init__(self, source: GymSource):
        self.source = source
        self._zip: zipfile.ZipFile | None = None
        self._root: Path | None = None
        if source.kind in (KIND_TREE, KIND_GIT):
            self._root = source.path
        elif source.kind == KIND_WHEEL:
            self._zip = zipfile.ZipFile(source.path)
        elif source.kind in (KIND_PIN, KIND_INDEX):
            self._zip = zipfile.ZipFile(fetch_artifact(source))
        else:
            raise InfraError(f"no distribution reader for kind {source.kind}")

    def read(self, relpath: str) -> str | None:
        if self._root is not None:
            path = self._root / relpath
            return path.read_text() if path.is_file() else None
        try:
            return self._zip.read(relpath).decode()
        except KeyError:
            return None

    def files(self, prefix: str) -> list[str]:
        """Every file under `prefix` (a folder path inside the package), sorted."""
        prefix = prefix.rstrip("/") + "/"
        if self._root is not None:
            base = self._root / prefix
            if not base.is_dir():
                return []
            return sorted(p.relative_to(self._root).as_posix() for p in base.rglob("*") if p.is_file())
        return sorted(n for n in self._zip.namelist() if n.startswith(prefix) and not n.endswith("/"))

    def exists(self, relpath: str) -> bool:
        if self._root is not None:
            return (self._root / relpath).exists()
        names = self._zip.namelist()
        return relpath in names or any(n.startswith(relpath.rstrip("/") + "/") for n in names)


def fetch_artifact(source: GymSource) -> Path:
    """The index wheel for ``source``, downloaded once into the cache and checked against its SHA256."""
    filename = source.extra.get("filename") or f"nemo_gym-{source.version}-py3-none-any.whl"
    target = cache_dir() / "artifacts" / filename
    if target.is_file() and sha256_file(target) == source.digest:
        return target
    found, _ = index.find_version(source.version)
    if found is None or found.filename != filename:
        raise InfraError(f"{filename} is not on the package index ({index.index_url()})")
    if found.sha256 != source.digest:
        raise InfraError(
            f"hash mismatch for {filename}: the pin says sha256:{source.digest}, the index says sha256:{found.sha256}"
        )
    index.download(found, target)
    return target
