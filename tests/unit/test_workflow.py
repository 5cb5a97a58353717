"""The GitHub Actions workflow users copy (examples/github-actions/gymgate.yml), linted by real linters: its shape
against GitHub's workflow schema (check-jsonschema) and its security (zizmor: pinned actions, no credentials left
behind, no template injection). No job of it runs here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gymgate.locations import repo_root

EXAMPLE = repo_root() / "examples" / "github-actions"
WORKFLOW = EXAMPLE / "gymgate.yml"


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is not installed in the harness (dev group)"
    return found


def _schema(path: Path) -> subprocess.CompletedProcess:
    args = [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path)]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def _zizmor(path: Path) -> subprocess.CompletedProcess:
    args = [_tool("zizmor"), "--offline", "--no-progress", "--config", str(EXAMPLE / "zizmor.yml"), str(path)]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", ["gymgate.yml", "gymgate-sharded.yml"])
def test_the_workflows_pass_both_linters(name):
    for result in (_schema(EXAMPLE / name), _zizmor(EXAMPLE / name)):
        assert result.returncode == 0, result.stdout + result.stderr


def test_the_sharded_workflow_runs_every_shard_then_merges():
    text = (EXAMPLE / "gymgate-sharded.yml").read_text()
    assert 'shard: ["1/3", "2/3", "3/3"]' in text and '--shard "$SHARD"' in text
    assert "gymgate merge " in text and "needs: shard" in text


@pytest.mark.parametrize(
    ("old", "new", "lint"),
    [
        ("runs-on: ubuntu-latest", "run-on: ubuntu-latest", _schema),  # a misspelt key
        ('exit "$CODE"', 'echo "${{ github.event.pull_request.title }}"; exit "$CODE"', _zizmor),  # injection
        ("          persist-credentials: false\n", "", _zizmor),  # the token left in .git for later steps
    ],
)
def test_the_linters_catch_a_broken_copy(tmp_path, old, new, lint):
    text = WORKFLOW.read_text()
    assert old in text
    broken = tmp_path / "gymgate.yml"
    broken.write_text(text.replace(old, new, 1))
    assert lint(broken).returncode != 0


def test_the_workflow_installs_gymgate_as_a_tool_and_reads_the_repositorys_settings():
    text = WORKFLOW.read_text()
    readme = (repo_root() / "README.md").read_text()
    assert 'uv tool install "$GYMGATE_FROM"' in text and "GYMGATE_FROM: git+https://" in text
    assert 'gymgate accept --gym-ref "$CANDIDATE" --json' in text
    assert "your-org/gymgate" in text  # what `gymgate init --from` replaces (gymgate.adoption.init.PLACEHOLDER)
    assert "examples/github-actions/gymgate.yml" in readme and "gymgate init" in readme
