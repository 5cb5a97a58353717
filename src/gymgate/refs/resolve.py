"""Turning a --gym-ref string into a GymSource, or one clear error naming what is accepted."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.refs import git, index, local
from gymgate.refs.pins import known_pins, load_pin
from gymgate.refs.source import KIND_GIT, KIND_INDEX, KIND_TREE, KIND_WHEEL, GymSource

VERSION_RE = re.compile(r"^v?\d+(\.\d+)+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
SHA_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
GIT_NAME_RE = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]+(?<![./])$")  # a tag or branch name


def accepted_forms() -> str:
    pins = ", ".join(known_pins()) or "(none)"
    return (
        "--gym-ref accepts: a pin name (known pins: "
        + pins
        + "); a nemo-gym version on the package index (e.g. 0.3.1); "
        "a path to a local Gym checkout or wheel; "
        "a git commit SHA (7-40 hex digits) in the Gym repository given by --gym-repo or GYMGATE_GYM_REPO (default: "
        "upstream); a tag or branch of that repository (e.g. v0.4.0, main) when --gym-repo or GYMGATE_GYM_REPO is set"
    )


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or ref.startswith(".") or ref.startswith("~") or ref.endswith(".whl")


def resolve_ref(ref: str, gym_repo: str | None = None) -> GymSource:
    ref = ref.strip()
    if not ref:
        raise UsageError("--gym-ref is empty. " + accepted_forms())
    pin = load_pin(ref) if re.fullmatch(r"[\w.+-]+", ref) else None
    if pin is not None:
        return pin
    if _looks_like_path(ref) or Path(ref).exists():
        return _resolve_path(Path(ref).expanduser())
    if SHA_RE.match(ref):
        return _resolve_git(ref.lower(), gym_repo or git.default_repo())
    # Tags and branches only of a repository the user named: a typo never becomes a network lookup upstream.
    explicit = gym_repo or os.environ.get(git.REPO_ENV_VAR)
    if explicit and GIT_NAME_RE.match(ref):
        repo_dir = git.open_repo(explicit)
        named = git.resolve_name(repo_dir, ref)
        if named is not None:
            commit, kind = named
            return _resolve_git(commit, explicit, {"ref": ref, "ref_kind": kind})
        if not VERSION_RE.match(ref):
            raise UsageError(f"{ref!r} is neither a tag nor a branch of Gym repository {explicit}. " + accepted_forms())
    if VERSION_RE.match(ref):
        return _resolve_index_version(ref.lstrip("v"))
    raise UsageError(f"unknown Gym ref {ref!r}. " + accepted_forms())


def _resolve_path(path: Path) -> GymSource:
    if not path.exists():
        raise UsageError(f"Gym ref {str(path)!r} looks like a path, but nothing is there. " + accepted_forms())
    path = path.resolve()
    if path.is_file():
        if path.suffix != ".whl":
            raise UsageError(f"{path} is a file but not a wheel (.whl). " + accepted_forms())
        kind, (version, requires), digest = KIND_WHEEL, local.wheel_metadata(path), local.sha256_file(path)
    else:
        kind, (version, requires), digest = KIND_TREE, local.tree_metadata(path), local.tree_digest(path)
    return GymSource(
        name=f"{kind}-{version}-{digest[:8]}",
        kind=kind,
        version=version,
        requires_python=requires,
        digest=digest,
        origin=str(path),
        path=path,
    )


def _resolve_index_version(version: str) -> GymSource:
    found, available = index.find_version(version)
    if found is None:
        raise UsageError(
            f"nemo-gym {version} is not on the package index ({index.index_url()}); "
            f"versions there: {', '.join(available) or 'none'}. " + accepted_forms()
        )
    return GymSource(
        name=version,
        kind=KIND_INDEX,
        version=version,
        requires_python=found.requires_python,
        digest=found.sha256,
        origin="index",
        extra={"filename": found.filename, **({"yanked": found.yanked} if found.yanked else {})},
    )


def _resolve_git(sha: str, repo: str, named: dict[str, str] | None = None) -> GymSource:
    """A commit (given by SHA, or by the tag or branch in `named`) exported to a tree; the commit is what is recorded
    and keyed, the name only says how it was asked for."""
    repo_dir = git.open_repo(repo)
    commit = git.resolve_commit(repo_dir, sha, repo)
    tree = git.export_commit(repo_dir, commit)
    version, requires = local.tree_metadata(tree)
    missing = (tree / git.MISSING).read_text().split() if (tree / git.MISSING).is_file() else []
    return GymSource(
        name=f"git-{commit[:12]}",
        kind=KIND_GIT,
        version=version,
        requires_python=requires,
        digest=commit,
        origin=repo,
        path=tree,
        commit=commit,
        extra={
            **(named or {}),
            **git.commit_info(repo_dir, commit),
            **({"missing": " ".join(missing)} if missing else {}),
        },
    )
