"""The environments a Gym declares — each resources server with its configs and example data — whether gymgate has
a case for it, and what keeps it from running here, read from the Gym's own requirements and configs by the rules
in runnable.toml (cases/runnable.py). What `gymgate cases list --gym-ref REF` shows."""

from __future__ import annotations

from dataclasses import dataclass, field

from gymgate.cases.environments import all_environments
from gymgate.cases.gym_layout import EXAMPLE, SERVERS, code_files, server_configs, server_files
from gymgate.cases.runnable import judge, recorded_config_blockers, requirements_of, usable_configs
from gymgate.recordings.read import read_recordings
from gymgate.refs.distribution import Distribution


@dataclass
class GymEnvironment:
    name: str
    configs: list[str] = field(default_factory=list)
    examples: dict[str, int] = field(default_factory=dict)  # example file -> rows
    cases: list[str] = field(default_factory=list)  # gymgate's environments (cases/<name>.toml) that use it
    blockers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recordings: int = 0  # recorded rollouts it ships (data/example_rollouts.jsonl)
    replayable: int = 0  # … whose row it ships too (gymgate.recordings.read)
    unreplayable: list[str] = field(default_factory=list)  # why the others cannot be replayed, each reason once
    usable: list[str] = field(default_factory=list)  # the configs nothing declared keeps from starting here

    @property
    def runnable(self) -> bool:
        return bool(self.examples) and not self.blockers

    @property
    def unjudgeable(self) -> str:
        """Why an environment without a case has nothing to be judged by here ("" when it has)."""
        if self.cases:
            return ""
        if not self.recordings:
            return "no case, and it ships no recorded rollout to judge it by"
        if not self.replayable:
            why = "; ".join(self.unreplayable)
            return f"no case, and none of its {self.recordings} recorded rollouts can be replayed: {why}"
        return ""

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "configs": self.configs,
            "examples": self.examples,
            "cases": self.cases,
            "runnable": self.runnable,
            "blockers": self.blockers,
            "notes": self.notes,
            "recordings": self.recordings,
            "replayable": self.replayable,
            "unreplayable": self.unreplayable,
        }


def catalog(dist: Distribution) -> list[GymEnvironment]:
    """Every resources server of the Gym, alphabetically."""
    names = sorted({f.split("/")[1] for f in dist.files(SERVERS) if f.count("/") >= 2})
    ours: dict[str, list[str]] = {}
    for env in all_environments():
        for server_dir in env.server_dirs:
            if server_dir.startswith(f"{SERVERS}/"):
                ours.setdefault(server_dir.split("/")[1], []).append(env.name + (" (draft)" if env.draft else ""))
    found = []
    for name in names:
        files = server_files(dist, name)
        configs = server_configs(files)
        item = GymEnvironment(name, configs=configs, cases=sorted(ours.get(name, [])))
        for example in (f for f in files if EXAMPLE.search(f) and "rollout" not in f.rsplit("/", 1)[1]):
            text = dist.read(example) or ""
            item.examples[example] = sum(1 for line in text.splitlines() if line.strip())
        recorded = read_recordings(dist, name, f"{SERVERS}/{name}/data")
        item.recordings, item.replayable = len(recorded), sum(1 for r in recorded if not r.unreplayable)
        item.unreplayable = list(dict.fromkeys(r.unreplayable for r in recorded if r.unreplayable))
        requirements = requirements_of(dist.read(f"{SERVERS}/{name}/requirements.txt") or "")
        item.blockers = judge(requirements, code_files(dist, f"{SERVERS}/{name}"))
        item.usable, judged = usable_configs(dist, configs)
        if configs and not item.usable:  # no config starts it here: say why the first one cannot
            item.blockers += judged[configs[0]][0]
        elif not item.cases and not item.blockers:  # it runs as its recordings ran, or not at all
            item.blockers += recorded_config_blockers(dist, name, configs, item.usable, judged)
        item.notes = list(dict.fromkeys(n for c in item.usable for n in judged[c][1]))
        if not item.examples:
            item.blockers.insert(0, "no example data")
        found.append(item)
    return found
