"""Builders for Gym-shaped test inputs: wheels, source trees, git repositories and stored runs; a user's moved HOME."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

from gymgate import verdict as categories
from gymgate.locations import cache_dir, envs_dir
from gymgate.pathid import sections
from gymgate.rl.profile import load as load_profile
from gymgate.runfolder import Failure, PathRecord, RunFolder, RunMark


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


def observation(params=None, result=None):
    """A path's full observation (PathRecord.observe): one policy request and Gym's result."""
    body = {"messages": [{"role": "user", "content": "Q?"}], "temperature": 0.7, "top_p": 0.95, **(params or {})}
    returned = {"reward": 1.0, "response": {"id": "resp_" + "a" * 32, "output": []}, **(result or {})}
    made = PathRecord.stub("mcqa:accepted", "PASS", "")
    made.observe([("policy", 200, body)], returned)
    return made.observed


def record(path, outcome, **fields) -> PathRecord:
    """A path record of the real type the session writes (a change of its shape reaches every test built on it)."""
    env, mode = path.split(":")
    fields.setdefault("reward", 1.0 if mode == "accepted" else 0.0)
    fields.setdefault("blame", "")  # as a completed path has it (an ERROR names its own)
    fields.setdefault("observed", observation())
    fields["failures"] = [Failure(**f) if isinstance(f, dict) else f for f in fields.get("failures", [])]
    fields["sections"] = {name: fields.pop(name) for name in sections() if name in fields}  # variant=…, fault=…
    return PathRecord(path=path, env=env, mode=mode, gym={}, outcome=outcome, **fields)


def stored_run(root, name, pin, records, complete=True, **mark):
    """A finished run folder as `gymgate accept` leaves it, with the lock of `pin`."""
    run = RunFolder(root / name)
    run.paths_dir.mkdir(parents=True)
    run.write_source({"name": pin, "version": pin, "kind": "pin", "digest": f"d-{pin}"})
    run.write_consumer({"profile": load_profile().to_json()})  # as harness/run.open_run writes it
    run.write_mark(RunMark(complete=complete, **mark))
    shutil.copyfile(envs_dir() / pin / "uv.lock", run.lock)
    for made in records:
        run.write_record(made)
    return run.root


REWARD = {"kind": "reward", "field": "reward", "expected": 1.0, "actual": 0.0}
# path: (baseline record, candidate record, candidate rerun outcome or None, category it must get)
CASES = {
    "a:accepted": ("PASS", ("FAIL", {"failures": [REWARD]}), None, categories.REGRESSED),
    "a:rejected": ("PASS", ("BROKEN", {"reason": "build: cannot lock"}), None, categories.BROKEN_CATEGORY),
    "b:accepted": (
        "PASS",
        ("ERROR", {"blame": "harness", "reason": "rollout: RaySystemError"}),
        None,
        categories.UNJUDGED,
    ),
    "b:rejected": ("PASS", ("FAIL", {"failures": [REWARD]}), "PASS", categories.FLAKY),
    "c:accepted": ("FAIL", ("PASS", {}), None, categories.FIXED),
    "c:rejected": ("SKIP", ("PASS", {}), None, categories.NEW_PATH),
    "d:accepted": ("FAIL", ("SKIP", {"reason": "gone"}), None, categories.REMOVED_PATH),
    "d:rejected": ("FAIL", ("FAIL", {"failures": [REWARD]}), None, categories.SAME_FAIL),
    "e:accepted": ("PASS", ("PASS", {"reward": 0.5}), None, categories.SAME_PASS),
    "e:rejected": ("SKIP", ("SKIP", {}), None, categories.SKIPPED),
    "f:accepted": ("PASS", ("PASS", {"observed": observation(params={"seed": 1})}), None, categories.CHANGED),
}


def every_category_runs(tmp_path):
    """A baseline and a candidate run (with one rerun) whose comparison holds every category (CASES)."""
    # The flaky path's baseline disagrees with itself (its second attempt in the same Gym failed).
    wobbly = {
        p: [record(p, "FAIL", failures=[REWARD]).to_json()] for p, spec in CASES.items() if spec[3] == categories.FLAKY
    }
    base = stored_run(
        tmp_path, "base", "0.3.0", [record(p, spec[0], repeats=wobbly.get(p, [])) for p, spec in CASES.items()]
    )
    cand = stored_run(tmp_path, "cand", "0.4.0", [record(p, spec[1][0], **spec[1][1]) for p, spec in CASES.items()])
    reruns = {p: spec[2] for p, spec in CASES.items() if spec[2]}
    RunFolder(cand).write_reruns_manifest({"baseline_run": base.name, "paths": sorted(reruns)})
    attempt = RunFolder(cand).attempt("candidate", 2).root
    stored_run(attempt.parent, attempt.name, "0.4.0", [record(p, o) for p, o in reruns.items()])
    return base, cand


def default_environments() -> list[str]:
    """The `default` set's environments (cases/sets.toml): the seven."""
    from gymgate.cases.named import load_environments

    return [e.name for e in load_environments()]


# Fields nemo-gym 0.7.0's result carries that 0.4.0's does not (measured on the real downgrade, report.md).
NEWER_RESULT_FIELDS = [
    "completed_at",
    "moderation",
    "phase",
    "prompt_cache_retention",
    "failure_kind",
    "failure_reason",
    "mask_sample",
    "namespace",
    "defer_loading",
    "background",
    "conversation",
    "max_tool_calls",
    "prompt_cache_key",
    "safety_identifier",
    "service_tier",
    "store",
    "top_logprobs",
    "truncation",
    "verbosity",
]


def bump_runs(tmp_path, envs, regressed=(), contract=(), baseline="0.7.0", candidate="0.4.0"):
    """A stored bump shaped like a real one over `envs` × accepted/rejected: the baseline's result carries
    NEWER_RESULT_FIELDS, the candidate's does not (every passing path changed); paths of `regressed` environments
    fail their reward; paths of `contract` environments fail the request contract (a dropped temperature)."""
    newer = observation(result={"response": {"output": [], **dict.fromkeys(NEWER_RESULT_FIELDS)}})
    older = observation()
    dropped = {
        "kind": "request_contract",
        "field": "policy request",
        "expected": "accepted",
        "actual": "sampling guard: policy request has temperature=None",
    }
    base_records, cand_records = [], []
    for env in envs:
        for mode in ("accepted", "rejected"):
            path = f"{env}:{mode}"
            base_records.append(record(path, "PASS", observed=newer))
            if env in regressed:
                cand_records.append(record(path, "FAIL", failures=[REWARD], observed=older))
            elif env in contract:
                cand_records.append(record(path, "FAIL", failures=[dropped], blame="contract", observed=older))
            else:
                cand_records.append(record(path, "PASS", observed=older))
    return (
        stored_run(tmp_path, "base", baseline, base_records),
        stored_run(tmp_path, "cand", candidate, cand_records),
    )


def moved_home(home: Path, **env: str) -> dict[str, str]:
    """This process's environment for a user whose HOME is `home` (made empty), with none of Ray's variables: what a
    run needs of the real home stays where it is (gymgate's cache, uv's cache and interpreters, pyenv, the
    configuration), so that only what lies in HOME itself differs; then `env`."""
    real = Path.home()
    home.mkdir(parents=True, exist_ok=True)
    moved = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    for name, path in {
        "XDG_CACHE_HOME": real / ".cache",
        "XDG_CONFIG_HOME": real / ".config",
        "XDG_DATA_HOME": real / ".local" / "share",
        "PYENV_ROOT": real / ".pyenv",
    }.items():
        moved.setdefault(name, str(path))
    return moved | {"HOME": str(home), "GYMGATE_CACHE": str(cache_dir())} | env
