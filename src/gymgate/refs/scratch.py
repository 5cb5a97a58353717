"""Scratch git repositories: a Gym tree committed under a throwaway identity, with no user configuration read. What
mutant histories (tests, `nox -s bench -- bisect`) are built with; gymgate's own ref handling is refs/git.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 120.0


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True, timeout=GIT_TIMEOUT_S
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    """Commit everything in `repo`; the new commit's SHA."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")
