"""The caller's side of what travels: its checkout packed by digest (every file git tracks or would track, as it
is on disk now, so what runs on a node is what would run here), and a unit's run folder written back into the
caller's runs/ as it streams in, never outside the folder it belongs to."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.locations import LAID_OUT, installed, repo_root
from gymgate.remote.node import Refused, pack


def checkout_files(root: Path) -> list[str]:
    """The checkout's files as git sees them: tracked ones (as on disk now) and untracked ones not ignored; an
    installed gymgate's laid-out tree (no git) whole, but for what Python caches."""
    if installed() and root == repo_root() and not (root / ".git").exists():
        found = (p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts)
        return sorted(str(p.relative_to(root)) for p in found if p.name != LAID_OUT)
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"{root}: a cluster run ships the checkout git lists; git could not list it ({exc})") from None
    names = [n for n in listed.decode().split("\0") if n]
    return sorted(n for n in names if (root / n).is_file() and not (root / n).is_symlink())


def checkout_pack(root: Path | None = None) -> tuple[str, bytes]:
    """The checkout as one reproducible pack, and its digest (what a node checks before it runs anything)."""
    root = root or repo_root()
    return pack(root, checkout_files(root))


def receive(files: dict[str, bytes], into: Path) -> list[str]:
    """Write a unit's new or changed run-folder files (by their path in the folder) into the caller's copy."""
    base = into.resolve()
    for name, data in files.items():
        target = (into / name).resolve()
        if not target.is_relative_to(base) or target == base:
            raise Refused(f"a unit sent {name!r}, which is not a file inside its run folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        partial.write_bytes(data)
        partial.replace(target)  # a reader (the progress display) never sees half a record
    return sorted(files)
