"""Which environments shard K of N runs. Balanced by each environment's measured cost (its Gym's start-up plus its
paths, in shards/costs.toml), not by name: gymgate.balance.longest_first, the same balancer that deals a run's
environments to its xdist workers, so every machine computes the same split from the same inputs."""

from __future__ import annotations

import re
import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gymgate.balance import longest_first
from gymgate.errors import UsageError
from gymgate.locations import repo_root
from gymgate.outcomes import EnvState
from gymgate.runfolder import RunFolder

SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        found = SHARD.match(text.strip())
        if not found or not 1 <= int(found.group(1)) <= int(found.group(2)):
            raise UsageError(f"--shard expects K/N with 1 <= K <= N (e.g. 1/2), got {text!r}")
        return cls(int(found.group(1)), int(found.group(2)))


def costs_file() -> Path:
    return repo_root() / "shards" / "costs.toml"


def _costs_table(table: str, path: Path | None = None) -> dict[str, float]:
    path = path or costs_file()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML ({exc})") from None
    return {str(k): float(v) for k, v in data.get(table, {}).items()}


def load_costs(path: Path | None = None) -> dict[str, float]:
    """Seconds per environment; {} when the file is absent (then every environment counts the same)."""
    return _costs_table("seconds", path)


def load_path_costs(path: Path | None = None) -> dict[str, float]:
    """Seconds per path id (every attempt of the path, once its Gym is up); {} when none were measured."""
    return _costs_table("paths", path)


def split(envs: list[str], count: int, costs: dict[str, float]) -> list[list[str]]:
    """`envs` in `count` groups of near-equal cost. An environment without a measurement costs the median of those
    with one. More shards than environments leaves some empty (a shard with nothing to run is a usage error)."""
    return [sorted(group) for group in longest_first(envs, count, costs)]


def shard_envs(envs: list[str], shard: Shard, costs: dict[str, float] | None = None) -> list[str]:
    chosen = split(envs, shard.count, load_costs() if costs is None else costs)[shard.index - 1]
    if not chosen:
        raise UsageError(
            f"shard {shard.label} has no environment to run: {len(envs)} environment(s) in {shard.count} shards"
        )
    return chosen


def _attempts_seconds(record) -> float | None:
    """A path's own time in a run: every attempt's rollout, postprocess and checks (not its wait for the Gym)."""
    spent = [(a.get("timings") or {}).get("path_s") for a in [{"timings": record.timings}, *record.repeats]]
    known = [float(s) for s in spent if isinstance(s, int | float)]
    return sum(known) if known else None


def measured_costs(runs: list[RunFolder]) -> dict[str, float]:
    """The median over `runs` of each environment's Gym start-up plus its paths' own time, in seconds."""
    samples: dict[str, list[float]] = {}
    for run in runs:
        spent: dict[str, float] = {}
        for env, status in run.service_statuses().items():
            if status.status in (EnvState.READY, EnvState.DONE):
                spent[env] = spent.get(env, 0.0) + float(status.seconds)
        for record in run.written_records().values():
            seconds = _attempts_seconds(record)
            if record.env in spent and seconds is not None:
                spent[record.env] += seconds
        for env, seconds in spent.items():
            samples.setdefault(env, []).append(seconds)
    return {env: round(statistics.median(values), 1) for env, values in sorted(samples.items())}


def measured_path_costs(runs: list[RunFolder]) -> dict[str, float]:
    """The median over `runs` of each path's own time (every attempt), in seconds: what its worker spends on it."""
    samples: dict[str, list[float]] = {}
    for run in runs:
        for path, record in run.written_records().items():
            seconds = _attempts_seconds(record)
            if seconds is not None:
                samples.setdefault(str(path), []).append(seconds)
    return {path: round(statistics.median(values), 2) for path, values in sorted(samples.items())}


def render_costs(costs: dict[str, float], path_costs: dict[str, float], sources: list[str]) -> str:
    lines = [
        "# Measured seconds per environment (its Gym's start-up plus its paths): how `accept --shard K/N` balances.",
        "# Measured seconds per path (every attempt, once its Gym is up): how a run deals environments to its workers.",
        "# Written by `gymgate shard-costs RUN… --write` from: " + ", ".join(sources),
        "",
        "[seconds]",
    ]
    lines += [f'"{env}" = {seconds}' for env, seconds in sorted(costs.items())]
    lines += ["", "[paths]"]
    lines += [f'"{path}" = {seconds}' for path, seconds in sorted(path_costs.items())]
    return "\n".join(lines) + "\n"
