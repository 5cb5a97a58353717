"""A run by git SHA, end to end: a local Gym repository made of the index's 0.3.0 and 0.4.0 sdists as
two commits, resolved by (abbreviated) SHA, locked, synced and started through the real CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gymgate.refs import resolve_ref
from gymgate.runfolder import RunFolder
from gymgate.services.processes import marked_pids
from tests.helpers import commit_all, git, sdist, unpack

SDISTS = ("0.3.0", "0.4.0")


@pytest.fixture(scope="module")
def sdist_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("gym") / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = {}
    for version in SDISTS:
        for child in repo.iterdir():
            if child.name != ".git":
                subprocess.run(["rm", "-rf", str(child)], check=True)
        unpack(sdist(version), repo)
        shas[version] = commit_all(repo, f"nemo-gym {version} sdist")
    return repo, shas


def test_both_commits_resolve_to_their_versions(sdist_repo):
    repo, shas = sdist_repo
    for version, sha in shas.items():
        source = resolve_ref(sha[:9], gym_repo=str(repo))
        assert (source.kind, source.version, source.commit) == ("git", version, sha)
        assert (source.path / "resources_servers" / "mcqa" / "app.py").is_file()


def test_accept_run_by_sha_starts_real_services(sdist_repo, tmp_path):
    repo, shas = sdist_repo
    sha = shas["0.4.0"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gymgate",
            "up",
            "--gym-ref",
            sha[:10],
            "--gym-repo",
            str(repo),
            "--env",
            "mcqa",
            "--runs-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"git commit {sha} in {repo}" in output
    assert "[unpinned]" in output
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name.endswith(run_dir.name.rsplit("-", 1)[1]) and f"git-{sha[:12]}" in run_dir.name
    record = RunFolder(run_dir).up_record()
    assert record["complete"] and record["environments"]["mcqa"]["status"] == "ready"
    source = RunFolder(run_dir).source()
    assert source["commit"] == sha and source["version"] == "0.4.0"
    assert marked_pids(record["run_id"]) == []
