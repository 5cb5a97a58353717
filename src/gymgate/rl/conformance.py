"""Does gymgate's consumer compute what NeMo RL's own code computes? The harness half of the opt-in conformance test
(tests/conformance/): the venv RL's half runs in, running it, and the comparison of the two halves' outputs.

The same stored Gym results go through NeMo RL's own postprocess and group functions (rl_side.py, in a venv of its
own from an RL checkout the user gives) and through gymgate's consumer (in a pin environment); each half writes
canonical JSON (rl_side.canonical) and `compare` sets them side by side, value for value: every difference is
named by the result's path id and the key where it is. Only differences of representation are allowed, each
listed and counted (ALLOWED), never silently: RL logs a histogram object where gymgate keeps the values it is
drawn from, RL's tensors are torch and gymgate's arrays numpy, and timing keys measure the run, not the data.

Nothing here imports the consumer (gymgate.consumer imports gymgate.rl): the test drives gymgate's half.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gymgate.errors import InfraError
from gymgate.locations import cache_dir
from gymgate.locks import held
from gymgate.rl.rl_side import ARRAY, DTYPE, HISTOGRAM, OBJECT, TABLE

RL_SIDE = Path(__file__).with_name("rl_side.py")
# What RL's half imports for real; everything else RL imports is stood in for (rl_side.py). torch 2.13.0 resolves to
# the CPU wheel the machine's pip finds (find-links); its wheel is built for CPython 3.11.
RL_VENV_PACKAGES = ("torch==2.13.0", "numpy", "pillow", "pydantic", "packaging", "typing_extensions")
RL_VENV_PYTHON = "python3.11"
READY = "ready.json"  # written last: a venv without it is half built and is built again
VENV_TIMEOUT_S, INSTALL_TIMEOUT_S, CHECK_TIMEOUT_S = 300.0, 1800.0, 300.0
LOCK_TIMEOUT_S = INSTALL_TIMEOUT_S + VENV_TIMEOUT_S
RL_SIDE_TIMEOUT_S = 1800.0
TIMING = "timing/"

# The differences of representation the comparison allows, each counted and listed in the report.
ALLOWED = {
    "histogram": "RL logs a wandb.Histogram; gymgate keeps the values it is drawn from (compared as floats)",
    "table": "RL logs a wandb.Table of one column; gymgate keeps the column's rows (compared row for row)",
    "dtype": "RL's tensors are torch, gymgate's arrays numpy: dtypes need not match, values must",
    "number type": "an int on one side is the equal float on the other (RL keeps the int its max, min or median of ints is)",
    "timing": "timing keys measure the run, not the data",
    "gymgate only": "gymgate's record-keeping beside RL's result (gym_result: Gym's result untouched; wire: the "
    "token types seen), never part of a batch",
}


class ConformanceError(InfraError):
    """The comparison could not be made (the venv, RL's import, a half that did not finish)."""


@dataclass(frozen=True)
class Venv:
    python: Path
    built: bool
    seconds: float


def venv_key(python: str = RL_VENV_PYTHON, packages: tuple[str, ...] = RL_VENV_PACKAGES) -> str:
    """The venv's cache key: the interpreter's version and the packages asked for."""
    version = _run([python, "-c", "import sys; print(sys.version)"], CHECK_TIMEOUT_S, "the RL venv's Python").stdout
    return hashlib.sha256(json.dumps([version.strip(), list(packages)]).encode()).hexdigest()[:16]


def rl_venv(python: str = RL_VENV_PYTHON, packages: tuple[str, ...] = RL_VENV_PACKAGES) -> Venv:
    """The venv RL's half runs in, from gymgate's cache (rl-conformance/<key>), built once (~1 GB, ~30 s from the
    local wheel): `python -m venv`, then pip. A venv whose READY mark is missing was left half built and is built
    anew; two tests building at once take turns."""
    began = time.monotonic()
    if shutil.which(python) is None:
        raise ConformanceError(f"RL's half needs {python} (torch's CPU wheel is built for it); it is not on PATH")
    root = cache_dir() / "rl-conformance"
    root.mkdir(parents=True, exist_ok=True)
    venv = root / venv_key(python, packages)
    interpreter = venv / "bin" / "python"
    with held(root / f"{venv.name}.lock", LOCK_TIMEOUT_S, f"building the RL venv {venv}"):
        if (venv / READY).is_file() and interpreter.is_file():
            return Venv(interpreter, False, time.monotonic() - began)
        shutil.rmtree(venv, ignore_errors=True)
        _run([python, "-m", "venv", str(venv)], VENV_TIMEOUT_S, "creating the RL venv")
        install = [str(interpreter), "-m", "pip", "install", "--no-input", "--progress-bar", "off", *packages]
        _run(install, INSTALL_TIMEOUT_S, "installing the RL venv's packages")
        probe = "import importlib.metadata as m; import json; print(json.dumps({p: m.version(p) for p in %r}))"
        names = [re.split(r"[=<>!~]", p)[0] for p in packages]
        versions = _run([str(interpreter), "-c", probe % names], CHECK_TIMEOUT_S, "checking the RL venv").stdout
        ready = {"python": python, "packages": list(packages), "installed": json.loads(versions)}
        (venv / READY).write_text(json.dumps(ready, indent=1) + "\n")
    return Venv(interpreter, True, time.monotonic() - began)


def run_rl_side(python: Path, rl_repo: Path, inputs: Path, out: Path, timeout_s: float = RL_SIDE_TIMEOUT_S) -> dict:
    """RL's half on `inputs` (rl_side.py), in an environment without the caller's Python, RL or HF variables (RL
    reads NRL_* at import; -I drops PYTHON* and the script's folder from sys.path)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "NRL_", "HF_", "RAY_", "VIRTUAL_ENV", "CUDA_"))
    }
    command = [str(python), "-I", str(RL_SIDE), "--rl-repo", str(rl_repo), "--inputs", str(inputs), "--out", str(out)]
    _run(command, timeout_s, "RL's half (rl_side.py)", env=env)
    return json.loads(out.read_text())


def _run(command: list[str], timeout_s: float, what: str, env: dict[str, str] | None = None):
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise ConformanceError(f"{what}: no end within {timeout_s:g} s ({' '.join(command)})") from None
    except OSError as exc:
        raise ConformanceError(f"{what}: could not start {command[0]}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-4000:]
        raise ConformanceError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")
    return done


# -- the comparison ------------------------------------------------------------------------------------------------
MISSING = "<missing>"


@dataclass
class Difference:
    path: str
    key: str
    rl: Any
    gymgate: Any


@dataclass
class Comparison:
    compared: list[str] = field(default_factory=list)  # results both halves were given
    skipped: dict[str, str] = field(default_factory=dict)  # path id -> why no result was compared
    differences: list[Difference] = field(default_factory=list)
    agreed: Counter[str] = field(default_factory=Counter)  # key pattern -> results it agreed on
    differed: Counter[str] = field(default_factory=Counter)  # key pattern -> results it differed on
    allowed: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind of ALLOWED, key pattern) -> leaves
    rejected_by_both: dict[str, str] = field(default_factory=dict)  # path id -> RL's and gymgate's exceptions
    problems: list[str] = field(default_factory=list)  # what makes the comparison itself unsound
    stood_in: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.compared) and not self.differences and not self.problems

    def table(self, limit: int = 200) -> str:
        """The report: problems, every difference (up to `limit` rows), allowed differences, agreed keys."""
        lines = [
            f"RL conformance: {len(self.compared)} results compared, {len(self.skipped)} skipped "
            f"({', '.join(f'{n} {why}' for why, n in Counter(self.skipped.values()).most_common())})",
            f"rejected by both: {len(self.rejected_by_both)}",
        ]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        if self.differences:
            lines += [
                "",
                f"differences ({len(self.differences)}):",
                "| path | key | RL | gymgate |",
                "|---|---|---|---|",
            ]
            lines += [
                f"| {d.path} | {d.key} | {_short(d.rl)} | {_short(d.gymgate)} |" for d in self.differences[:limit]
            ]
            if len(self.differences) > limit:
                lines.append(f"... {len(self.differences) - limit} more")
            lines += ["", "keys that differed (results):"]
            lines += [f"  {k}: {n}" for k, n in sorted(self.differed.items())]
        if self.allowed:
            lines += ["", "allowed differences (leaves):"]
            lines += [f"  [{kind}] {key}: {n}  ({ALLOWED[kind]})" for (kind, key), n in sorted(self.allowed.items())]
        lines += ["", f"keys that agreed ({len(self.agreed)} patterns; results agreed on / differed on):"]
        lines += [f"  {k}: {n} / {self.differed.get(k, 0)}" for k, n in sorted(self.agreed.items())]
        for path, why in sorted(self.rejected_by_both.items()):
            lines.append(f"rejected by both: {path}: {why}")
        return "\n".join(lines)


def _short(value: Any, width: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, allow_nan=True, default=str)
    text = text.replace("|", "\\|").replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def compare(rl: dict[str, Any], gymgate: dict[str, Any], skipped: dict[str, str] | None = None) -> Comparison:
    """RL's outputs (run_rl_side) beside gymgate's (the same canonical shape), result by result, then the group of
    every result together."""
    found = Comparison(skipped=dict(skipped or {}), stood_in=list(rl.get("stood_in") or []))
    for name, what in (
        ("stand_ins_called", "RL called stand-ins at run time"),
        ("imports_missing_at_run_time", "RL imported modules at run time that its venv lacks"),
        ("tokenizer_asked", "RL asked the stand-in tokenizer for more than batch_decode and pad_token_id"),
    ):
        if rl.get(name):
            found.problems.append(f"{what}: {sorted(set(rl[name]))}")
    ours, theirs = gymgate.get("items") or {}, rl.get("items") or {}
    agents = {str(a) for a in gymgate.get("agents") or []}
    for path in sorted(set(ours) | set(theirs)):
        if path not in ours or path not in theirs:
            found.differences.append(Difference(path, "(item)", theirs.get(path, MISSING), ours.get(path, MISSING)))
            continue
        found.compared.append(path)
        _item(found, path, theirs[path], ours[path], agents)
    together_rl, together_ours = rl.get("together") or {}, gymgate.get("together") or {}
    if together_rl.get("ids") != together_ours.get("ids"):
        found.differences.append(Difference("(together)", "ids", together_rl.get("ids"), together_ours.get("ids")))
    elif together_rl.get("ids"):
        _stages(found, "(together)", together_rl, together_ours, agents, ("group",))
    return found


def _item(found: Comparison, path: str, rl: dict[str, Any], ours: dict[str, Any], agents: set[str]) -> None:
    if "raised" in rl or "raised" in ours:
        if "raised" in rl and "raised" in ours:
            found.agreed["postprocess raises"] += 1
            found.rejected_by_both[path] = f"RL {_what(rl['raised'])}; gymgate {_what(ours['raised'])}"
        else:
            found.differed["postprocess raises"] += 1
            found.differences.append(
                Difference(path, "postprocess", _what(rl.get("raised")), _what(ours.get("raised")))
            )
        return
    for key in sorted(set(ours.get("gymgate_only") or [])):
        found.allowed[("gymgate only", f"result.{key}")] += 1
    _stages(found, path, rl, ours, agents, ("result", "group"))


def _what(failure: dict[str, Any] | None) -> str:
    return "returned" if failure is None else f"raised {failure['type']}: {failure['message'][:300]}"


def _stages(
    found: Comparison, path: str, rl: dict[str, Any], ours: dict[str, Any], agents: set[str], stages: tuple[str, ...]
) -> None:
    for stage in stages:
        failed_rl, failed_ours = rl.get(f"{stage}_raised"), ours.get(f"{stage}_raised")
        if failed_rl or failed_ours:
            key = f"{stage} raises"
            if failed_rl and failed_ours:
                found.agreed[key] += 1
                found.rejected_by_both[f"{path} ({stage})"] = f"RL {_what(failed_rl)}; gymgate {_what(failed_ours)}"
            else:
                found.differed[key] += 1
                found.differences.append(Difference(path, stage, _what(failed_rl), _what(failed_ours)))
            continue
        leaves: dict[str, bool] = {}  # key pattern -> whether every leaf under it agreed
        _walk(found, path, stage, rl.get(stage, MISSING), ours.get(stage, MISSING), agents, leaves)
        for pattern, same in leaves.items():
            (found.agreed if same else found.differed)[pattern] += 1


def _pattern(key: str, agents: set[str]) -> str:
    """A key as the report counts it: list indices as [*], an agent's name as <agent>, Gym's full result cut to
    three levels below `full_result`."""
    key = re.sub(r"\[\d+\]", "[*]", key)
    for agent in agents:
        key = key.replace(f".{agent}/", ".<agent>/")
    head, marker, tail = key.partition(".full_result.")
    if marker:
        key = head + marker + ".".join(tail.split(".")[:3])
    return key


def _is(value: Any, marker: str) -> bool:
    return isinstance(value, dict) and marker in value


def _walk(
    found: Comparison, path: str, key: str, rl: Any, ours: Any, agents: set[str], leaves: dict[str, bool]
) -> None:
    pattern = _pattern(key, agents)

    def same(flag: bool = True) -> None:
        leaves[pattern] = leaves.get(pattern, True) and flag

    def differ() -> None:
        same(False)
        found.differences.append(Difference(path, key, rl, ours))

    last = key.rpartition(".")[2]
    if last.startswith(TIMING) or "/timing/" in last:
        found.allowed[("timing", pattern)] += 1
        return
    if _is(rl, HISTOGRAM) and isinstance(ours, list):
        found.allowed[("histogram", pattern)] += 1
        values = rl[HISTOGRAM]
        floats = [float(v) for v in values] if isinstance(values, list) else values
        return _walk(found, path, key, floats, [float(v) for v in ours], agents, leaves)
    if _is(rl, TABLE) and isinstance(ours, list):
        found.allowed[("table", pattern)] += 1
        rows = rl[TABLE].get("data")
        column = [row[0] for row in rows] if isinstance(rows, list) and all(len(r) == 1 for r in rows) else rows
        return _walk(found, path, key, column, ours, agents, leaves)
    if _is(rl, ARRAY) or _is(ours, ARRAY):
        kinds = (rl.get(DTYPE) if _is(rl, ARRAY) else None, ours.get(DTYPE) if _is(ours, ARRAY) else None)
        if kinds[0] != kinds[1]:
            found.allowed[("dtype", f"{pattern} ({kinds[0]} / {kinds[1]})")] += 1
        values = (rl[ARRAY] if _is(rl, ARRAY) else rl, ours[ARRAY] if _is(ours, ARRAY) else ours)
        return _walk(found, path, key, values[0], values[1], agents, leaves)
    if _is(rl, OBJECT) or _is(ours, OBJECT):
        return differ()  # an object neither half could write as data: never an agreement
    if isinstance(rl, dict) and isinstance(ours, dict):
        for name in list(rl) + [k for k in ours if k not in rl]:
            _walk(found, path, f"{key}.{name}", rl.get(name, MISSING), ours.get(name, MISSING), agents, leaves)
        if not rl and not ours:
            same()
        return None
    if isinstance(rl, list) and isinstance(ours, list):
        if len(rl) != len(ours):
            return differ()
        if rl == ours and _plain(rl) and [type(v) for v in rl] == [type(v) for v in ours]:
            # Token ids and logprobs: equal lists of plain values of the same types, in one step (no NaN among them:
            # a NaN is unequal to itself and is walked below).
            leaves[_pattern(f"{key}[0]", agents)] = leaves.get(_pattern(f"{key}[0]", agents), True)
            return None
        for index, (a, b) in enumerate(zip(rl, ours, strict=True)):
            _walk(found, path, f"{key}[{index}]", a, b, agents, leaves)
        if not rl:
            same()
        return None
    if _number(rl) and _number(ours):
        if (math.isnan(rl) and math.isnan(ours)) or rl == ours:
            if type(rl) is not type(ours):
                found.allowed[("number type", pattern)] += 1
            return same()
        return differ()
    return same() if type(rl) is type(ours) and rl == ours else differ()


def _plain(values: list[Any]) -> bool:
    return bool(values) and all(v is None or isinstance(v, bool | int | float | str) for v in values)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
