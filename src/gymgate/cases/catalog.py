"""The environments a Gym declares — each resources server with its configs and example data — whether gymgate has
a case for it, and what keeps it from running here, read from the Gym's own requirements and configs by the rules
in runnable.toml. What `gymgate cases list --gym-ref REF` shows."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from gymgate.cases.environments import all_environments
from gymgate.errors import EXIT_OK
from gymgate.recordings.read import read_recordings
from gymgate.refs.distribution import Distribution

RULES_FILE = Path(__file__).with_name("runnable.toml")
SERVERS = "resources_servers"
ENVIRONMENTS = "environments"  # Gym >= 0.4.0: an environment's own folder (config.yaml, data/)
EXAMPLE = re.compile(r"/data/[^/]*example[^/]*\.jsonl$")  # input rows (not example_rollouts*.jsonl: outputs)


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

    @property
    def runnable(self) -> bool:
        return bool(self.examples) and not self.blockers

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
        }


@cache
def _rules() -> dict:
    return tomllib.loads(RULES_FILE.read_text())


def _requirements(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def judge(
    requirements: list[str], config_texts: list[str], sources: dict[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """(blockers, notes) from what an environment declares (and, in `sources`, what its own code imports)."""
    blockers, notes = [], []
    for rule in _rules().get("import", []):
        pattern = re.compile(rule["pattern"], re.M)
        found = next(((name, m) for name, text in (sources or {}).items() if (m := pattern.search(text))), None)
        if found:
            blockers.append(rule["blocker"].format(match=f"{found[1].group(0).strip()} in {found[0]}"))
    for rule in _rules().get("requirement", []):
        for requirement in requirements:
            found = re.search(rule["pattern"], requirement)
            if found:
                blockers.append(rule["blocker"].format(match=requirement))
                break
    for rule in _rules().get("config_key", []):
        key = re.compile(rf"^\s*{re.escape(rule['key'])}\s*:", re.M)
        if any(key.search(text) for text in config_texts):
            (blockers if "blocker" in rule else notes).append(rule.get("blocker") or rule["note"])
    return blockers, notes


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
        folders = [f"{SERVERS}/{name}", f"{ENVIRONMENTS}/{name}"]
        files = [f for folder in folders for f in dist.files(folder)]
        configs = [
            f for f in files if f.endswith((".yaml", ".yml")) and ("/configs/" in f or f.endswith("/config.yaml"))
        ]
        item = GymEnvironment(name, configs=configs, cases=sorted(ours.get(name, [])))
        for example in (f for f in files if EXAMPLE.search(f) and "rollout" not in f.rsplit("/", 1)[1]):
            text = dist.read(example) or ""
            item.examples[example] = sum(1 for line in text.splitlines() if line.strip())
        recorded = read_recordings(dist, name, f"{SERVERS}/{name}/data")
        item.recordings, item.replayable = len(recorded), sum(1 for r in recorded if not r.unreplayable)
        requirements = _requirements(dist.read(f"{SERVERS}/{name}/requirements.txt") or "")
        code = {
            f: dist.read(f) or ""
            for f in dist.files(f"{SERVERS}/{name}")
            if f.endswith(".py") and "/tests/" not in f and not f.rsplit("/", 1)[1].startswith("test_")
        }
        item.blockers, item.notes = judge(requirements, [dist.read(c) or "" for c in configs], code)
        if not item.examples:
            item.blockers.insert(0, "no example data")
        found.append(item)
    return found


def list_command(args) -> int:
    """`gymgate cases list`: which environments of a Gym have example data, a case, and can run here."""
    from gymgate.refs import resolve_ref
    from gymgate.refs.distribution import Distribution
    from gymgate.report.fidelity import measured
    from gymgate.runfolder import runs_dir

    source = resolve_ref(args.gym_ref, args.gym_repo)
    found = catalog(Distribution(source))
    if args.list_json:
        print(json.dumps({"gym": source.to_json(), "environments": [e.to_json() for e in found]}, indent=2))
        return EXIT_OK
    with_data = [e for e in found if e.examples]
    covered = [e for e in found if e.cases]
    runnable = [e for e in found if e.runnable and not e.cases]
    print(
        f"Gym {source.name} ({source.describe()}): {len(found)} environments, {len(with_data)} with example data, "
        f"{len(covered)} with a case, {len(runnable)} more with nothing declared against running here"
    )
    width = max(len(e.name) for e in found) if found else 10
    run, replayed = measured(args.runs_dir or runs_dir(), source.digest)
    print(f"{'environment':<{width}}  {'rows':>4}  {'recorded':>8}  {'reproduce':>9}  {'case':<24}  runs here")
    for item in found:
        rows = sum(item.examples.values())
        recorded = f"{item.replayable}/{item.recordings}" if item.recordings else "—"
        ran = [replayed[c] for c in item.cases if c in replayed]
        reproduce = ", ".join(f"{f.reproduce}/{f.replays}" for f in ran) or "—"
        here = "yes: nothing declared against it" if item.runnable else "no: " + "; ".join(item.blockers)
        notes = f" ({'; '.join(item.notes)})" if item.notes and item.runnable else ""
        cases = ", ".join(item.cases) or "—"
        print(f"{item.name:<{width}}  {rows or '—':>4}  {recorded:>8}  {reproduce:>9}  {cases:<24}  {here}{notes}")
    print(
        "recorded: rollouts Gym recorded against real models that gymgate can replay here (their row is shipped) / all"
    )
    print(
        f"reproduce: replays that reproduced their recording / replayed, in {run.root}"
        if run
        else "reproduce: no stored run of this ref yet (`gymgate accept --gym-ref REF --no-baseline` measures it)"
    )
    return EXIT_OK
