"""Per-run setup shared by every worker, produced once under a file lock in the run folder:
the tokenizer artifact (saved, then loaded by all) and the example rows with their hash checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gymgate.atomic import write_json_atomic
from gymgate.cases.case import InputDrift, load_case, read_row
from gymgate.cases.environments import Environment
from gymgate.endpoint.tokenizer import build_tokenizer
from gymgate.locks import held
from gymgate.runfolder import RunFolder

SETUP_LOCK_TIMEOUT_S = 600.0  # the first worker builds the tokenizer and checks the rows in seconds


def _inputs(environments: list[Environment], gym_root: Path) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    for env in environments:
        if not env.has_case:  # its paths are replays: each carries its own row (gymgate.paths.replayed)
            continue
        case = load_case(env)
        if not (gym_root / case.file).is_file():
            continue  # an environment this Gym does not have: its paths are skipped
        try:
            inputs[env.name] = {"raw": read_row(case, gym_root), "sha256": case.sha256}
        except InputDrift as drift:
            inputs[env.name] = {"drift": {"expected": drift.expected, "actual": drift.actual}, "message": str(drift)}
    return inputs


def shared_setup(run: RunFolder, environments: list[Environment], gym_root: Path) -> tuple[Any, dict[str, Any]]:
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415 - pin environment only

    setup = run.setup_dir
    setup.mkdir(parents=True, exist_ok=True)
    with held(setup / "setup.lock", SETUP_LOCK_TIMEOUT_S, "the run's shared setup"):
        done = setup / "inputs.json"
        if not done.is_file():
            build_tokenizer().save_pretrained(setup / "tokenizer")
            write_json_atomic(done, _inputs(environments, gym_root))
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(setup / "tokenizer"))
    return tokenizer, json.loads(done.read_text())
