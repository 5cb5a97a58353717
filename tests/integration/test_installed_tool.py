"""gymgate used from an RL repository as its users will: the wheel built from this checkout, installed with
`uv tool install` into a tool environment of its own (nothing of the checkout on its path), a scratch "consumer"
repository set up by `gymgate init` with one case of its own, and a real bump (0.4.0 → 0.7.0, mcqa and the
consumer's case) judged from a folder inside it. gymgate's shipped reviews cover mcqa; the consumer's case is open
until `gymgate ack --review` writes the consumer's own reviews into the consumer's folder, and a second pass keeps the
comment a reviewer wrote there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from gymgate.locations import cases_dir, repo_root

OURS = "mcqa_ours"


def _run(args: list[str], cwd: Path, env: dict[str, str], stdin: str = "", timeout: float = 1500):
    return subprocess.run(args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tool(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """gymgate installed as a tool from a wheel of this checkout: its executable, and the environment to run it in
    (none of the harness's: no PYTHONPATH, no virtualenv, no data root of the checkout's)."""
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH (the README's test command installs it)"
    where = tmp_path_factory.mktemp("tool")
    built = _run(
        [uv, "build", "--wheel", "-o", str(where / "dist"), str(repo_root())], where, dict(os.environ), timeout=300
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (where / "dist").glob("gymgate-*.whl")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GYMGATE_REPO_ROOT")}
    env |= {"UV_TOOL_DIR": str(where / "tools"), "UV_TOOL_BIN_DIR": str(where / "bin")}
    installed = _run([uv, "tool", "install", str(wheel)], where, env, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    return where / "bin" / "gymgate", env


def test_an_rl_repository_judges_a_bump_with_its_own_config_case_and_reviews(tool, tmp_path):
    gymgate, env = tool
    repo = tmp_path / "rl-repo"
    (repo / "examples").mkdir(parents=True)
    done = _run([str(gymgate), "init", "--from", "git+https://example.org/gymgate@v0"], repo, env)
    assert done.returncode == 0, done.stderr
    assert "wrote gymgate.toml" in done.stdout and (repo / ".github" / "workflows" / "gymgate.yml").is_file()
    # The consumer's case: mcqa's, under its own name, without Gym's recordings (they are reviewed for mcqa).
    case = (cases_dir() / "mcqa.toml").read_text().replace('name = "mcqa"', f'name = "{OURS}"')
    (repo / "gymgate" / "cases" / f"{OURS}.toml").write_text(
        case.replace("[environment]\n", "[environment]\nreplays = false\n", 1)
    )

    where = repo / "examples"  # run from inside the repository: its settings are found walking up
    bump = ["accept", "--gym-ref", "0.7.0", "--baseline", "0.4.0", "--env", "mcqa", "--env", OURS, "--json"]
    done = _run([str(gymgate), *bump], where, env)
    assert done.returncode == 1, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    candidate = Path(summary["report"]["results"]).parent
    assert candidate.is_relative_to(repo / ".gymgate" / "runs")  # runs beside the settings, not in the tool
    results = json.loads((candidate / "results.json").read_text())
    categories = {p["path"]: p["category"] for p in results["paths"]}
    ours = {c for p, c in categories.items() if p.startswith("mcqa:")}
    assert "same-pass" in ours and ours <= {"same-pass", "fixed"}  # gymgate's reviews cover mcqa
    changed = sorted(p for p, c in categories.items() if c == "changed")
    assert changed and all(p.startswith(f"{OURS}:") for p in changed), categories

    # The consumer's review: the first change accepted, the next skipped, then stop.
    done = _run(
        [str(gymgate), "ack", "--review", str(candidate)], where, env, stdin="reviewed on mcqa by gymgate\ns\nq\n"
    )
    assert done.returncode == 0, done.stderr
    (written,) = (repo / "gymgate" / "acks").glob("*.toml")
    assert written.name == "0.4.0-to-0.7.0.toml" and "1 accepted, 1 skipped" in done.stdout
    reviewed = tomllib.loads(written.read_text())["change"]
    assert [e["reason"] for e in reviewed] == ["reviewed on mcqa by gymgate", ""]

    # A reviewer's note in the file survives the second pass, which accepts the rest.
    text = written.read_text().replace("\n[[change]]\n", "\n# checked with the RL team\n[[change]]\n", 1)
    written.write_text(text)
    done = _run([str(gymgate), "ack", "--review"], where, env, stdin="same as mcqa\n" * 20)  # the newest compared run
    assert done.returncode == 0, done.stderr
    assert f"acknowledging {candidate}" in done.stdout
    text = written.read_text()
    assert "# checked with the RL team" in text and 'reason = ""' not in text

    # The same two runs judged again: clean, by gymgate's reviews and the consumer's together.
    baseline = summary["baseline"]["run_dir"]
    done = _run([str(gymgate), "compare", baseline, str(candidate), "--json"], where, env)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    files = json.loads((candidate / "results.json").read_text())["acknowledgements"]["files"]
    assert str(written) in files and any(Path(f).parent.name == "acks" and Path(f) != written for f in files)
    shipped = [Path(f) for f in files if Path(f) != written]
    assert all(not f.is_relative_to(repo) for f in shipped)  # gymgate's own, from the installed data
