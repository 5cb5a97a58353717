"""Verdicts of real bumps through `gymgate accept`: a candidate Gym checkout whose mcqa verifier was changed
(a real regression, confirmed by reruns in fresh Gym instances), one whose verifier fails only once (newly flaky:
a regression too), one that cannot be locked (BROKEN), and a full seven-environment bump from 0.2.1 to
0.4.0. The baseline is the real 0.4.0 pin; its mcqa run is made once and reused by the later tests. These are the
verdict's mechanics on the hand-written paths (`--no-replays`); test_replay_mutants.py and test_baseline_compare.py
judge bumps with the recordings replayed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.runfolder import RunFolder
from tests.helpers import write_tree

MCQA = "resources_servers/mcqa/app.py"
VERDICT_LINE = "        is_correct = (pred == gold) if (pred is not None and gold) else False\n"


def _accept(runs, *args, timeout=1500):
    command = [sys.executable, "-m", "gymgate", "accept", "--runs-dir", str(runs), "--no-replays", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout + result.stderr


def _accept_in_actions(runs, summary, *args, timeout=1500):
    """`accept --json` as a GitHub Actions job runs it: (exit code, stdout, stderr)."""
    command = [sys.executable, "-m", "gymgate", "accept", "--runs-dir", str(runs), "--json", "--no-replays", *args]
    env = dict(os.environ, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    return result.returncode, result.stdout, result.stderr


def _candidate_run(runs, marker):
    """The newest run with `marker` in its name that carries a report (the candidate of the last bump)."""
    return max(r for r in runs.iterdir() if marker in r.name and (r / "report.md").is_file())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


def _patched_gym(root, replacement: str):
    """The index's 0.4.0 sdist as a local checkout, with mcqa's verdict line replaced."""
    unpack(sdist("0.4.0"), root)
    app = root / MCQA
    text = app.read_text()
    assert text.count(VERDICT_LINE) == 1, "mcqa's verifier changed upstream; update this test's patch"
    app.write_text(text.replace(VERDICT_LINE, replacement))
    return root


def test_a_changed_verifier_is_a_regression_confirmed_by_reruns(runs, tmp_path):
    # The bump compares against a lower-cased gold letter: the correct answer "B" no longer earns reward 1.
    gym = _patched_gym(
        tmp_path / "gym", VERDICT_LINE.replace("(pred == gold)", "(pred == gold.lower())").replace("\n", "  # bump\n")
    )
    summary = tmp_path / "step-summary.md"
    args = ("--gym-ref", str(gym), "--baseline", "0.4.0", "--env", "mcqa", "-n", "1", "--reruns", "1")
    code, stdout, out = _accept_in_actions(runs, summary, *args)
    assert code == 1, out
    assert "Verdict: 1 regressed, 0 broken." in out  # the view, on stderr beside the progress (--json holds stdout)
    # Where CI shows it: the JSON verdict alone on stdout, the report in the job summary, one annotation for the
    # regressed path, and the phases folded in the log.
    verdict = json.loads(stdout)
    assert (verdict["exit_code"], verdict["categories"]) == (1, {"regressed": 1, "same-pass": 1})
    assert "**Verdict: 1 regressed, 0 broken.**" in summary.read_text()
    annotations = [line for line in out.splitlines() if line.startswith(("::error", "::warning"))]
    assert len(annotations) == 1 and annotations[0].startswith("::error title=gymgate%3A mcqa%3Aaccepted regressed::")
    assert "[reward] reward" in annotations[0]
    for phase in ("environment: 0.4.0", "Gym start-up: ", "paths: ", "reruns: 0.4.0 -> "):
        assert f"::group::{phase}" in out, phase
    assert out.count("::group::") == out.count("::endgroup::")
    run = _candidate_run(runs, "-tree-0.4.")
    report = (run / "report.md").read_text()
    # Two attempts in the first run's Gym, two in the rerun's, on each ref.
    assert (
        "- `mcqa:accepted`: PASS → FAIL (baseline: PASS, PASS, PASS, PASS; candidate: FAIL, FAIL, FAIL, FAIL)" in report
    )
    assert f"- **nemo-gym**: 0.4.0 → checkout {gym}" in report
    assert "- [reward] reward — 1 path: `mcqa:accepted` (regressed)" in report
    assert (run / "retry.txt").read_text() == "mcqa:accepted\n"
    # Attempt 2 ran in its own fresh sessions, on both refs, for the failing path only.
    for role in ("candidate", "baseline"):
        assert list(RunFolder(run).attempt(role, 2).records()) == ["mcqa:accepted"]
    results = json.loads((run / "results.json").read_text())
    by_path = {p["path"]: p for p in results["paths"]}
    assert by_path["mcqa:rejected"]["category"] == "same-pass"
    assert by_path["mcqa:accepted"]["root_causes"] == ["[reward] reward"]


def test_a_verifier_that_fails_once_on_the_candidate_is_a_regression_newly_flaky(runs, tmp_path):
    """The candidate's verifier fails its first call only: attempt 1 FAILs, attempt 2 (the same Gym) passes. The
    baseline passed every time, so the bump made the path unreliable: regressed, never exit 0."""
    marker = tmp_path / "failed-once"
    flaky = (
        VERDICT_LINE
        + f"        if is_correct and not __import__('os').path.exists({str(marker)!r}):\n"
        + f"            open({str(marker)!r}, 'w').close()\n"
        + "            is_correct = False\n"
    )
    gym = _patched_gym(tmp_path / "gym", flaky)
    code, out = _accept(runs, "--gym-ref", str(gym), "--baseline", "0.4.0", "--env", "mcqa", "-n", "1")
    assert code == 1, out
    assert "cached: " in out  # the baseline's mcqa run from the test above
    assert marker.is_file()
    run = _candidate_run(runs, "-tree-0.4.")
    report = (run / "report.md").read_text()
    assert "**Verdict: 1 regressed, 0 broken, 1 nondeterministic on the candidate.**" in report
    assert "(baseline: PASS, PASS; candidate: FAIL, PASS)" in report
    assert "nondeterministic on the candidate: attempt 1 outcome = FAIL vs attempt 2 outcome = PASS" in report
    assert not (run / "reruns" / "candidate-2").exists()  # decided by the attempts in one Gym: no rerun needed


def test_a_candidate_that_cannot_be_locked_is_broken(runs, tmp_path):
    gym = write_tree(tmp_path / "gym", "0.4.1")
    pyproject = gym / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'dependencies = ["nemo-gym-no-such-dependency==9.9.9"]\n')
    code, out = _accept(runs, "--gym-ref", str(gym), "--baseline", "0.4.0", "--env", "mcqa", "-n", "1")
    assert code == 1, out
    assert "Verdict: candidate BROKEN: build: cannot lock" in " ".join(out.split())
    run = _candidate_run(runs, "-tree-0.4.")
    records = RunFolder(run).records().values()
    assert sorted((r.path, r.outcome) for r in records) == [
        ("mcqa:accepted", "BROKEN"),
        ("mcqa:rejected", "BROKEN"),
    ]
    assert "nemo-gym-no-such-dependency" in (run / "report.md").read_text()
    assert not (run / "reruns").exists()  # a broken build is not rerun


def test_a_full_bump_from_0_2_1_to_0_4_0(runs, tmp_path):
    """Unreviewed, 0.2.1 -> 0.4.0 fails although every path that passes on 0.2.1 passes on 0.4.0, showing each contract change the bump
    makes to what the model receives (side by side); the reviewed steps 0.2.1 -> 0.3.0 -> 0.4.0 in acks/ then
    compose into its review: the same two runs compared again pass, each change naming the step that made it."""
    unreviewed = tmp_path / "no-acks"
    unreviewed.mkdir()
    code, out = _accept(
        runs, "--gym-ref", "0.4.0", "--baseline", "0.2.1", "--acks", str(unreviewed), "--no-shipped-acks", timeout=2400
    )
    assert code == 1, out
    run = _candidate_run(runs, "-0.4.0-")
    results = json.loads((run / "results.json").read_text())
    categories = {p["path"]: p["category"] for p in results["paths"]}
    assert len(categories) == 14
    assert categories.pop("structured_outputs_v4:accepted") == "new path"
    assert categories.pop("structured_outputs_v4:rejected") == "new path"
    # The single-step row carries `metadata: null`, sent as RL sends it: 0.2.1's and 0.4.0's model server both
    # answer it with HTTP 500 (fixed in 0.5.0).
    for mode in ("accepted", "rejected"):
        assert categories.pop(f"single_step_tool_use_with_argument_comparison:{mode}") == "same-fail"
    assert set(categories.values()) == {"changed"}, categories
    outcomes = {p["path"]: p["candidate"]["outcome"] for p in results["paths"]}
    assert {o for p, o in outcomes.items() if not p.startswith("single_step")} == {"PASS"}
    report = (run / "report.md").read_text()
    assert "**Verdict: 0 regressed, 0 broken, 10 changed (unacknowledged contract changes).**" in report
    assert "- **nemo-gym**: 0.2.1 → 0.4.0" in report
    assert "- **openai**: 2.6.1 → 2.7.2" in report
    # Tool definitions lose `strict`, top_logprobs is sent as 0, /tokenize is no longer asked: contract changes,
    # each one line over the paths it touches (report/grouping.py).
    five = "5 environments (all but single_step_tool_use_with_argument_comparison, structured_outputs_v4)"
    trains = "(RL trains on it)"  # what the model is asked is what RL's generation, and so its loss, comes from
    assert (
        f"#### `requests.policy.*.body.tools.*.function.strict` gone in 0.4.0 (was `false`) {trains} — workplace"
        in report
    )
    assert (
        f"#### `requests.policy.*.body.top_logprobs` new in 0.4.0: `0` {trains} — {five} × accepted, rejected" in report
    )
    assert (
        f"#### `requests.tokenize` gone in 0.4.0 (was 7 values by path) {trains} — {five} × accepted, rejected"
        in report
    )
    # Training items gain routed_experts: additive, listed, not failing.
    assert (
        f"- `result.response.output.*.routed_experts` new in 0.4.0: `null` {trains} — {five} × accepted, rejected"
        in report
    )

    baseline = json.loads((run / "results.json").read_text())["provenance"]["baseline"]["run_dir"]
    composed = tmp_path / "composed"
    composed.mkdir()
    command = [sys.executable, "-m", "gymgate", "compare", baseline, str(run), "--out", str(composed)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)  # the checkout's acks/
    assert done.returncode == 0, done.stdout + done.stderr
    report = (composed / "report.md").read_text()
    assert "**Verdict: no regression (10 paths pass on both: 10 with reviewed changes)" in report, report
    assert "0.2.1 → 0.3.0: " in report and "0.3.0 → 0.4.0: " in report  # by which steps
