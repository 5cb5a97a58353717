"""Opt-in: gymgate's consumer against NeMo RL's own code, value for value, on every result a run recorded.

Each result Gym returned (a path record's `observed.result`, and each later attempt's) goes through NeMo RL's own
postprocess and group functions, imported from the checkout given (gymgate/rl/rl_side.py, in a torch venv cached
under gymgate's cache), and through gymgate's consumer (in the 0.7.0 pin environment), with the row the path sent;
then gymgate/rl/conformance.py compares the message logs, the postprocessed full results, each result's final batch
and rollout metrics as a group of one, and those of every result as one group. Any difference but the listed
representation ones (conformance.ALLOWED) fails the test with a table naming the path and the key.

Not part of `nox -s tests` (it runs tests/unit and tests/integration). Run it with the harness's pytest:

    GYMGATE_RL_REPO=/path/to/RL .nox/tests/bin/pytest tests/conformance -q -s
    .nox/tests/bin/pytest tests/conformance -q -s --rl-repo /path/to/RL

GYMGATE_CONFORMANCE_RUN=runs/<folder> compares that run's results; without it the test first makes a small run of its
own (ACCEPT). GYMGATE_CONFORMANCE_REPORT=FILE keeps the report. gymgate's side is judged as RL profile PROFILE: give
a checkout of that profile's RL commit.

This file is also gymgate's half of the comparison: the test runs it in the pin environment (numpy, transformers)
as `python test_rl_conformance.py gymgate-side INPUTS OUT`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gymgate.rl import conformance
from gymgate.runfolder.folder import RunFolder

RL_REPO_VAR, RUN_VAR, REPORT_VAR = "GYMGATE_RL_REPO", "GYMGATE_CONFORMANCE_RUN", "GYMGATE_CONFORMANCE_REPORT"
PIN = "0.7.0"
PROFILE = "7ea279ab"  # the RL revision gymgate's side is judged as: the checkout should be at its rl_commit
ENVS = ("mcqa", "workplace_assistant", "equivalence_llm_judge")
ACCEPT = ("accept", "--gym-ref", PIN, "--no-baseline", *(a for e in ENVS for a in ("--env", e)))
ACCEPT += ("--variants", "none", "--faults", "none")
ACCEPT_TIMEOUT_S, LOCATE_TIMEOUT_S, GYMGATE_SIDE_TIMEOUT_S = 3600.0, 1800.0, 1800.0
GYMGATE_SIDE = "gymgate-side"
GYMGATE_ONLY = ("gym_result", "wire")  # gymgate's record-keeping beside RL's result (conformance.ALLOWED)


# -- gymgate's half (runs in the pin environment) ------------------------------------------------------------------
def gymgate_side(inputs: dict[str, Any]) -> dict[str, Any]:
    """What gymgate's consumer makes of each item, in the canonical shape RL's half writes: postprocess_result as the
    Gym actor runs it, then the rollout's rejection rule and final_batch, for each result alone and for all of them
    together, with the full-result tables RL logs as metrics."""

    import numpy as np

    from gymgate.consumer.batch import final_batch, full_result_tables
    from gymgate.consumer.postprocess import postprocess_result
    from gymgate.consumer.rollout import reject_failed
    from gymgate.endpoint.tokenizer import SPECIAL_TOKENS, build_tokenizer
    from gymgate.rl.profile import load
    from gymgate.rl.rl_side import canonical, drive
    from gymgate.runner.path import GENERATION

    tokenizer, profile = build_tokenizer(), load(inputs["profile"])
    max_len = GENERATION.max_total_sequence_length  # what a path's rollout runs with

    def group(rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
        reject_failed(results, profile)
        ones = np.ones(len(rows), dtype=np.float32)  # the collated rows' loss multiplier (consumer/processor.py)
        batch, metrics = final_batch(rows, results, ones, tokenizer.pad_token_id, max_len, profile)
        for agent, column in full_result_tables(rows, results).items():
            metrics[f"{agent}/full_result"] = column
        batch.pop("message_log")  # each result's own is compared with it
        return canonical({"input_ids": batch.pop("input_ids"), "batch": batch, "metrics": metrics})

    def keep(entry: dict[str, Any], processed: dict[str, Any]) -> None:
        entry["gymgate_only"] = [k for k in GYMGATE_ONLY if processed.pop(k, None) is not None]

    items, whole = drive(inputs["items"], lambda row, result: postprocess_result(result, tokenizer), group, keep)
    return {
        "tokenizer": {
            "special": dict(zip(SPECIAL_TOKENS, tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS), strict=True)),
            "pad_token_id": tokenizer.pad_token_id,
        },
        "max_total_len": max_len,
        "agents": sorted({str((item["row"].get("agent_ref") or {}).get("name")) for item in inputs["items"]}),
        "items": items,
        "together": whole,
    }


# -- the harness's half --------------------------------------------------------------------------------------------
def collect(run: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every result the run recorded (each path's, then each later attempt's as `<path>#<n>`) with the row its path
    sent (data/<env>/<mode>.jsonl); the rest by why nothing is compared for it."""
    folder = RunFolder(run)
    items: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for path, record in sorted(folder.records().items()):
        data = folder.data_file(record.env, record.mode)
        attempts = [record.observed, *((r.get("observed") or {}) for r in record.repeats)]
        for number, observed in enumerate(attempts, 1):
            name = path if number == 1 else f"{path}#{number}"
            result = (observed or {}).get("result")
            if not isinstance(result, dict):
                skipped[name] = f"no result recorded ({record.outcome.value})"
            elif not data.is_file():
                skipped[name] = "no row in data/"
            else:
                items.append({"id": name, "row": json.loads(data.read_text().splitlines()[0]), "result": result})
    return items, skipped


@pytest.fixture(scope="module")
def rl_repo(request) -> Path:
    given = request.config.getoption("--rl-repo", default=None) or os.environ.get(RL_REPO_VAR)
    if not given:
        pytest.skip(f"opt-in: give a NeMo RL checkout with --rl-repo or ${RL_REPO_VAR}")
    repo = Path(given).resolve()
    if not (repo / "nemo_rl" / "environments" / "nemo_gym.py").is_file():
        pytest.fail(f"{repo} is no NeMo RL checkout (no nemo_rl/environments/nemo_gym.py)")
    return repo


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    given = os.environ.get(RUN_VAR)
    if given:
        run = Path(given).resolve()
        if not (run / "paths").is_dir():
            pytest.fail(f"${RUN_VAR}={given} is no run folder (no paths/)")
        return run
    runs = tmp_path_factory.mktemp("conformance-runs")
    command = [sys.executable, "-m", "gymgate", *ACCEPT, "--runs-dir", str(runs)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=ACCEPT_TIMEOUT_S, check=False)
    if done.returncode not in (0, 1):  # 1: some path failed, its results are still recorded
        pytest.fail(f"{' '.join(command)} exited {done.returncode}:\n{(done.stderr or done.stdout)[-4000:]}")
    made = sorted(p for p in runs.iterdir() if (p / "paths").is_dir())
    if not made:
        pytest.fail(f"{' '.join(command)} left no run folder in {runs}")
    return made[-1]


def _pin_python() -> str:
    command = [sys.executable, "-m", "gymgate.envs.locate", PIN]
    done = subprocess.run(command, capture_output=True, text=True, timeout=LOCATE_TIMEOUT_S, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return done.stdout.strip().splitlines()[-1]


def test_gymgate_consumer_computes_what_rl_computes(rl_repo: Path, run_dir: Path, tmp_path: Path) -> None:
    items, skipped = collect(run_dir)
    assert items, f"{run_dir} recorded no result to compare ({len(skipped)} paths without one)"
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"profile": PROFILE, "items": items}))

    began = time.monotonic()
    ours_file = tmp_path / "gymgate.json"
    command = [_pin_python(), __file__, GYMGATE_SIDE, str(inputs), str(ours_file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=GYMGATE_SIDE_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"gymgate's half failed:\n{(done.stderr or done.stdout)[-4000:]}"
    ours = json.loads(ours_file.read_text())
    gymgate_s = time.monotonic() - began

    venv = conformance.rl_venv()
    began = time.monotonic()
    settings = {k: ours[k] for k in ("tokenizer", "max_total_len")}
    rl_inputs = tmp_path / "rl-inputs.json"
    rl_inputs.write_text(json.dumps({**settings, "items": items}))
    theirs = conformance.run_rl_side(venv.python, rl_repo, rl_inputs, tmp_path / "rl.json")
    rl_s = time.monotonic() - began

    found = conformance.compare(theirs, ours, skipped)
    report = "\n".join(
        [
            f"run: {run_dir}",
            f"RL: {theirs.get('nemo_rl')} (gymgate judged as profile {PROFILE}); stood in: {len(found.stood_in)} modules",
            f"RL venv: {venv.python} ({'built' if venv.built else 'reused'} in {venv.seconds:.1f} s); "
            f"gymgate's half {gymgate_s:.1f} s, RL's half {rl_s:.1f} s",
            found.table(),
        ]
    )
    (tmp_path / "report.md").write_text(report + "\n")
    if os.environ.get(REPORT_VAR):
        Path(os.environ[REPORT_VAR]).write_text(report + "\n")
    print(report)
    assert found.ok, report


if __name__ == "__main__":
    # gymgate's half, in the pin environment: python test_rl_conformance.py gymgate-side INPUTS OUT
    if len(sys.argv) != 4 or sys.argv[1] != GYMGATE_SIDE:
        sys.exit(f"usage: python {Path(__file__).name} {GYMGATE_SIDE} INPUTS OUT")
    out = gymgate_side(json.loads(Path(sys.argv[2]).read_text()))
    Path(sys.argv[3]).write_text(json.dumps(out, allow_nan=True))
