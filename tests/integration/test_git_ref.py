"""A run by git SHA, end to end: a local Gym repository made of the index's 0.3.0 and 0.4.0 sdists as
two commits, resolved by (abbreviated) SHA, locked, synced and started through the real CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gymgate.envs.project import uv_env
from gymgate.processes import marked_pids
from gymgate.refs import resolve_ref
from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.refs.scratch import commit_all, git
from gymgate.runfolder import RunFolder

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


def test_a_commit_whose_dependencies_match_is_built_from_its_neighbour(sdist_repo, tmp_path):
    """Two commits that lock the same packages but nemo-gym: the second environment is a copy of a neighbour with only
    nemo-gym (and the generated project) installed, exactly in sync with its own lock, and the first is unchanged."""
    from gymgate.envs.prepare import prepare_env

    repo, shas = sdist_repo
    (repo / "CHANGELOG-gymgate-test.md").write_text("an unrelated change\n")
    later = commit_all(repo, "an unrelated commit")
    first = prepare_env(resolve_ref(shas["0.4.0"], gym_repo=str(repo)))
    second = prepare_env(resolve_ref(later, gym_repo=str(repo)))
    # Built from a neighbour (this commit's, or any other environment with the same dependencies: a tie), installing
    # only nemo-gym and the generated project.
    assert second.built and second.built_from is not None
    assert set(second.installed) == {"nemo-gym", f"gymgate-env-git-{later[:12]}"}, second.installed
    check = subprocess.run(
        ["uv", "sync", "--locked", "--check", "--project", str(second.project), "--python", str(second.python)],
        env={**uv_env(), "UV_PROJECT_ENVIRONMENT": str(second.path)},
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr  # exactly its own lock, nothing more or less
    where = "import nemo_gym, pathlib; print(pathlib.Path(nemo_gym.__file__).parents[1])"
    for env, commit in ((first, shas["0.4.0"]), (second, later)):
        found = subprocess.run([str(env.python), "-c", where], capture_output=True, text=True, check=True)
        assert found.stdout.strip().endswith(commit), (env.key, found.stdout)


def test_a_commit_that_needs_python_3_13_runs_by_sha(tmp_path):
    """A commit of today's Gym (the 0.7.0 sdist: Requires-Python >= 3.13.14, environment servers) by SHA through
    --gym-repo: it gets an interpreter that satisfies it and its real services start, every declared server ready."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    unpack(sdist("0.7.0"), repo)
    sha = commit_all(repo, "nemo-gym 0.7.0 sdist")
    source = resolve_ref(sha[:9], gym_repo=str(repo))
    assert (source.version, source.requires_python) == ("0.7.0", ">=3.13.14")
    runs = tmp_path / "runs"
    argv = [sys.executable, "-m", "gymgate", "up", "--gym-ref", sha[:9], "--gym-repo", str(repo), "--env", "mcqa"]
    result = subprocess.run([*argv, "--runs-dir", str(runs)], capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "(Python 3.13." in output
    (run_dir,) = runs.iterdir()
    record = RunFolder(run_dir).up_record()
    mcqa = record["environments"]["mcqa"]
    assert mcqa["status"] == "ready", mcqa["reason"]
    assert "mcqa_environment_server" in {s["name"] for s in mcqa["servers"]}
    interpreter = RunFolder(run_dir).environment()["interpreter"]
    assert tuple(map(int, interpreter["version"].split("."))) >= (3, 13, 14)
    assert marked_pids(record["run_id"]) == []
