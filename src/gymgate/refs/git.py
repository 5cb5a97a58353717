"""Resolving a commit SHA, tag or branch in a Gym git repository and exporting that commit as a source tree."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from gymgate.errors import InfraError, UsageError
from gymgate.locations import cache_dir
from gymgate.options import GYM_REPO_VAR

UPSTREAM_REPO = "https://github.com/NVIDIA-NeMo/Gym.git"
MISSING = ".gymgate-missing"  # in an exported tree: the files its repository lacked
REPO_ENV_VAR = GYM_REPO_VAR
GIT_TIMEOUT_S = 120
EXPORT_TIMEOUT_S = 600  # writing out a whole tree (~60 MB for Gym)


def default_repo() -> str:
    return os.environ.get(REPO_ENV_VAR) or UPSTREAM_REPO


def _git(args: list[str], cwd: Path | None = None, timeout: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true")
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _local_repo_path(repo: str) -> Path | None:
    if repo.startswith("file://"):
        return Path(repo[len("file://") :])
    if "://" in repo or (":" in repo and not repo.startswith("/") and "@" in repo.split(":")[0]):
        return None
    return Path(repo).expanduser()


def open_repo(repo: str) -> Path:
    """A git directory holding ``repo``'s commits: the path itself, or a bare mirror in the cache."""
    local = _local_repo_path(repo)
    if local is not None:
        if not local.exists():
            raise UsageError(f"Gym repository {repo} does not exist")
        probe = _git(["rev-parse", "--git-dir"], cwd=local)
        if probe.returncode != 0:
            raise UsageError(f"{repo} is not a git repository: {probe.stderr.strip()}")
        return local
    mirror = cache_dir() / "git" / hashlib.sha256(repo.encode()).hexdigest()[:16]
    try:
        if (mirror / "HEAD").exists():
            result = _git(["fetch", "--quiet", "--prune", "origin", "+refs/*:refs/*"], cwd=mirror)
        else:
            mirror.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="mirror-", dir=mirror.parent))
            result = _git(["clone", "--quiet", "--mirror", repo, str(tmp)])
            if result.returncode == 0:
                tmp.rename(mirror)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"cannot reach Gym repository {repo} (no answer in {GIT_TIMEOUT_S} s); "
            f"point --gym-repo (or {REPO_ENV_VAR}) at a local clone or mirror"
        ) from None
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["git failed"])[-1]
        raise UsageError(
            f"cannot reach Gym repository {repo}: {reason}; "
            f"point --gym-repo (or {REPO_ENV_VAR}) at a local clone or mirror"
        )
    return mirror


def resolve_commit(repo_dir: Path, sha: str, repo: str) -> str:
    result = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{sha}^{{commit}}"], cwd=repo_dir)
    if result.returncode != 0:
        ambiguous = _git(["rev-parse", "--disambiguate=" + sha], cwd=repo_dir).stdout.split()
        if len(ambiguous) > 1:
            raise UsageError(f"commit {sha} is ambiguous in {repo}: {', '.join(c[:12] for c in ambiguous)}")
        raise UsageError(f"commit {sha} is not in Gym repository {repo}")
    return result.stdout.strip()


def resolve_name(repo_dir: Path, name: str) -> tuple[str, str] | None:
    """The commit a tag or branch of the repository names, and which of the two it is; None when it names neither.
    Tags win over branches (a release tag is what people mean by `v0.4.0`)."""
    for kind, full in (
        ("tag", f"refs/tags/{name}"),
        ("branch", f"refs/heads/{name}"),
        ("branch", f"refs/remotes/origin/{name}"),
    ):
        found = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{full}^{{commit}}"], cwd=repo_dir)
        if found.returncode == 0:
            return found.stdout.strip(), kind
    return None


def commit_info(repo_dir: Path, commit: str) -> dict[str, str]:
    """What reports call a commit by besides its SHA: its subject and author date."""
    shown = _git(["show", "-s", "--format=%s%x00%aI", commit], cwd=repo_dir)
    subject, _, date = shown.stdout.strip().partition("\0")
    return {"subject": subject, "date": date} if shown.returncode == 0 else {}


def merge_base(repo_dir: Path, good: str, bad: str) -> str:
    """Where `bad`'s history and `good`'s meet: `good` itself when it is an ancestor of `bad`; otherwise the commit a
    release branch (say) forked from."""
    found = _git(["merge-base", good, bad], cwd=repo_dir)
    if found.returncode != 0 or not found.stdout.strip():
        raise UsageError(f"{good[:12]} and {bad[:12]} share no history: nothing to bisect between them")
    return found.stdout.strip()


def first_parent_commits(repo_dir: Path, good: str, bad: str) -> list[str]:
    """The commits after `good` up to and including `bad`, oldest first, following first parents (the history a
    branch's maintainers merged, as bisection walks it). `good` must be an ancestor of `bad` (see merge_base)."""
    ancestor = _git(["merge-base", "--is-ancestor", good, bad], cwd=repo_dir)
    if ancestor.returncode != 0:
        raise UsageError(f"{good[:12]} is not an ancestor of {bad[:12]}: nothing to bisect between them")
    listed = _git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}"], cwd=repo_dir)
    if listed.returncode != 0:
        raise UsageError(f"cannot list the commits between {good[:12]} and {bad[:12]}: {listed.stderr.strip()}")
    return listed.stdout.split()


def touched_files(repo_dir: Path, commit: str, under: list[str]) -> list[str]:
    """The files `commit` changed (against its first parent) under any of the `under` folders."""
    shown = _git(["diff", "--name-only", f"{commit}^", commit, "--", *under], cwd=repo_dir)
    return shown.stdout.split() if shown.returncode == 0 else []


def missing_files(repo_dir: Path, commit: str) -> list[str]:
    """Files of the commit whose contents this repository does not hold (a mirror stored without some large data
    blobs): `git archive` refuses such a commit as a whole."""
    listed = _git(["ls-tree", "-r", "-z", "--full-tree", commit], cwd=repo_dir)
    entries = [e.split("\t", 1) for e in listed.stdout.split("\0") if e]
    blobs = {meta.split()[2]: path for meta, path in entries if meta.split()[1] == "blob"}
    if not blobs:
        return []
    checked = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        cwd=repo_dir,
        input="\n".join(blobs) + "\n",
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    gone = [line.split()[0] for line in checked.stdout.splitlines() if line.endswith(" missing")]
    return sorted(blobs[sha] for sha in gone if sha in blobs)


def export_commit(repo_dir: Path, commit: str) -> Path:
    """The commit's files under the cache (exported once, atomically: a half-written tree is never seen). Files
    whose contents the repository lacks are left out, with a warning naming them, and listed in the tree's
    `.gymgate-missing` (an environment that needs one of them cannot run that commit)."""
    target = cache_dir() / "src" / commit
    if (target / ".gymgate-complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{commit[:12]}-", dir=target.parent))
    gone = missing_files(repo_dir, commit)
    excluded = [f":(exclude,literal){path}" for path in gone]
    if gone:
        print(
            f"warning: {len(gone)} file(s) of {commit[:12]} are not in the repository and are left out: "
            + ", ".join(gone[:5])
            + (" …" if len(gone) > 5 else ""),
            flush=True,
        )
        (tmp / MISSING).write_text("".join(f"{path}\n" for path in gone))
    pathspec = ["--", ".", *excluded] if gone else []
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit, *pathspec],
            cwd=repo_dir,
            capture_output=True,
            timeout=EXPORT_TIMEOUT_S,
            check=False,
        )
        if archive.returncode != 0:
            raise UsageError(f"cannot export commit {commit}: {archive.stderr.decode(errors='replace').strip()}")
        subprocess.run(
            ["tar", "-x", "-C", str(tmp)],
            input=archive.stdout,
            capture_output=True,
            timeout=EXPORT_TIMEOUT_S,
            check=True,
        )
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InfraError(f"cannot export commit {commit} into {tmp}: {exc}") from None
    except UsageError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / ".gymgate-complete").write_text(commit + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target
