"""Builders for Gym-shaped test inputs: wheels, source trees and git repositories."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path


def write_tree(root: Path, version: str, requires_python: str = ">=3.12", extra_files: dict | None = None) -> Path:
    major, minor, patch = version.split(".")
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "nemo-gym"\ndynamic = ["version"]\nrequires-python = "{requires_python}"\n'
    )
    (root / "nemo_gym").mkdir(exist_ok=True)
    (root / "nemo_gym" / "package_info.py").write_text(
        f'MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = ""\n'
    )
    for rel, text in (extra_files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def write_wheel(path: Path, name: str = "nemo_gym", version: str = "0.4.0", requires: str = ">=3.12") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(
            f"{name}-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\nRequires-Python: {requires}\n\n",
        )
        wheel.writestr("resources_servers/mcqa/requirements.txt", "-e nemo-gym[dev] @ ../../\ntiktoken\n")
    return path


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")
