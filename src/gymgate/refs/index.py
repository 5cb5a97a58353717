"""Looking nemo-gym versions up on the package index (PEP 691 JSON simple API)."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from gymgate.errors import InfraError
from gymgate.locations import cache_dir

DEFAULT_INDEX = "https://pypi.org/simple"
PROJECT = "nemo-gym"
ACCEPT = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class IndexFile:
    filename: str
    version: str
    sha256: str
    requires_python: str
    url: str
    yanked: str = ""  # the yank reason; PEP 592 lets an exact `==` request still install it


def index_url() -> str:
    """The index uv will lock against, so a version we accept is one uv can install."""
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        if os.environ.get(var):
            return os.environ[var].rstrip("/")
    return DEFAULT_INDEX


def _version_of(filename: str) -> str:
    stem = filename[: -len(".tar.gz")] if filename.endswith(".tar.gz") else filename
    return stem.split("-")[1]


def list_files(base: str | None = None, timeout: float = 30.0) -> list[IndexFile]:
    url = f"{base or index_url()}/{PROJECT}/"
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.load(response)
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError, OSError) as exc:
        raise InfraError(f"cannot read {url} from the package index: {exc}") from exc
    files = []
    for entry in payload.get("files", []):
        name = entry.get("filename", "")
        if not (name.endswith(".whl") or name.endswith(".tar.gz")):
            continue
        yanked = entry.get("yanked") or ""
        files.append(
            IndexFile(
                filename=name,
                version=_version_of(name),
                sha256=entry.get("hashes", {}).get("sha256", ""),
                requires_python=entry.get("requires-python") or "",
                url=entry.get("url", ""),
                yanked=(yanked if isinstance(yanked, str) else "yanked") if yanked else "",
            )
        )
    return files


def find_version(version: str, base: str | None = None) -> tuple[IndexFile | None, list[str]]:
    """The artifact uv would install for ``version`` (wheel preferred) and every version listed."""
    files = list_files(base)
    versions = sorted({f.version for f in files if not f.yanked}, key=_sort_key)
    matches = [f for f in files if f.version == version]
    matches.sort(key=lambda f: not f.filename.endswith(".whl"))
    return (matches[0] if matches else None), versions


def _sort_key(version: str) -> tuple:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def download(file: IndexFile, target: Path, timeout: float = 300.0) -> Path:
    """Download ``file`` to ``target`` atomically, refusing bytes whose SHA256 differs from the index's."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(file.url, timeout=timeout) as response:
            while block := response.read(1 << 20):
                digest.update(block)
                out.write(block)
        if digest.hexdigest() != file.sha256:
            raise InfraError(
                f"hash mismatch for {file.filename}: the index says sha256:{file.sha256}, "
                f"the download is sha256:{digest.hexdigest()}"
            )
        os.replace(tmp, target)
    except (urllib.error.URLError, OSError) as exc:
        raise InfraError(f"cannot download {file.filename}: {exc}") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def cached_sdist(version: str) -> Path:
    """The index's sdist of nemo-gym `version`, downloaded once into gymgate's cache (what mutants and benches
    build Gym sources from)."""

    name = f"nemo_gym-{version}.tar.gz"
    target = cache_dir() / "artifacts" / name
    if not target.is_file():
        (found,) = [f for f in list_files() if f.filename == name]
        download(found, target)
    return target


def unpack_sdist(tarball: Path, into: Path) -> None:
    """Extract an sdist's contents, without its top folder, into `into` (a Gym source tree)."""
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts[1:]
            if not parts:
                continue
            member.name = str(Path(*parts))
            archive.extract(member, into, filter="data")
