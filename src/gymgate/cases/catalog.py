"""The environments a Gym declares — each resources server with its configs and example data — whether gymgate has
a case for it, and what keeps it from running here, read from the Gym's own requirements and configs by the rules
in runnable.toml. What `gymgate cases list --gym-ref REF` shows."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from gymgate.cases.environments import all_environments
from gymgate.errors import EXIT_OK
from gymgate.recordings.read import RECORDINGS, read_recordings
from gymgate.refs.distribution import Distribution

RULES_FILE = Path(__file__).with_name("runnable.toml")
SERVERS = "resources_servers"
AGENTS = "responses_api_agents"
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


@cache
def _rules() -> dict:
    return tomllib.loads(RULES_FILE.read_text())


def _requirements(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def judge(requirements: list[str], sources: dict[str, str] | None = None) -> list[str]:
    """What keeps a server from running whichever config starts it: its requirements, and (`sources`) what its own
    code does."""
    blockers = []
    for rule in _rules().get("code", []):
        pattern = re.compile(rule["pattern"], re.M)
        for name, text in (sources or {}).items():
            if "files" in rule and not fnmatch.fnmatch(name.rsplit("/", 1)[-1], rule["files"]):
                continue
            found = pattern.search(text)
            if found:
                blockers.append(rule["blocker"].format(match=f"{found.group(0).strip()} in {name}"))
                break
    for rule in _rules().get("requirement", []):
        for requirement in requirements:
            found = re.search(rule["pattern"], requirement)
            if found:
                blockers.append(rule["blocker"].format(match=requirement))
                break
    return blockers


def judge_config(text: str) -> tuple[list[str], list[str]]:
    """(blockers, notes) of one config: what it declares (a model service of its own, a GPU model server) and the
    settings it interpolates that nothing defines."""
    blockers, notes = [], []
    for rule in _rules().get("config_key", []):
        if re.search(rf"^\s*{re.escape(rule['key'])}\s*:", text, re.M):
            (blockers if "blocker" in rule else notes).append(rule.get("blocker") or rule["note"])
    for rule in _rules().get("config_pattern", []):
        found = re.search(rule["pattern"], text)
        if found:
            blockers.append(rule["blocker"].format(match=found.group(0)))
    unset = _unset_interpolations(text)
    if unset:
        blockers.append(_rules()["interpolation"]["blocker"].format(match=", ".join(f"${{{n}}}" for n in unset)))
    return blockers, notes


INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _unset_interpolations(text: str) -> list[str]:
    """Names a config interpolates (`${name}`) that it does not define as a top-level key and a run does not
    supply."""
    text = re.sub(r"(^|\s)#.*$", "", text, flags=re.M)  # a commented-out block asks for nothing
    defined = set(_rules().get("interpolation", {}).get("supplied", []))
    defined.update(re.findall(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:", text, re.M))
    return sorted(set(INTERPOLATION.findall(text)) - defined)


def server_files(dist: Distribution, name: str) -> list[str]:
    """A server's files: its resources_servers/ folder and (Gym >= 0.4.0) its environments/ folder."""
    return [f for folder in (f"{SERVERS}/{name}", f"{ENVIRONMENTS}/{name}") for f in dist.files(folder)]


def server_configs(files: list[str]) -> list[str]:
    return [f for f in files if f.endswith((".yaml", ".yml")) and ("/configs/" in f or f.endswith("/config.yaml"))]


def code_files(dist: Distribution, folder: str) -> dict[str, str]:
    """A server's own code (tests aside) and its pyproject.toml (where it says its dependencies come from)."""
    return {
        f: dist.read(f) or ""
        for f in dist.files(folder)
        if (f.endswith(".py") or f.endswith("/pyproject.toml"))
        and "/tests/" not in f
        and not f.rsplit("/", 1)[1].startswith("test_")
    }


@cache
def _agent_blockers(dist: Distribution, folder: str) -> tuple[str, ...]:
    """The code rules applied to an agent's folder (read once per Gym: many servers share an agent)."""
    return tuple(judge([], code_files(dist, folder)))


def recorded_agents(files: Distribution, server: str) -> list[str]:
    """The agent instances the server's recordings name (`agent_ref.name`), most used first; where they name none,
    the ones its example rows name (Gym routes a row to the agent it names, and refuses a row whose agent the
    running config does not declare)."""
    for data in (RECORDINGS, "example.jsonl"):
        counts: dict[str, int] = {}
        for line in (files.read(f"{SERVERS}/{server}/data/{data}") or "").splitlines():
            try:
                ref = json.loads(line).get("agent_ref")
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                counts[ref["name"]] = counts.get(ref["name"], 0) + 1
        if counts:
            return sorted(counts, key=lambda name: -counts[name])
    return []


def _started_servers(text: str) -> list[tuple[str, str, str]]:
    """(kind, folder name, entrypoint) of every server a config starts (resources servers and agents)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return []
    found = []
    for value in data.values() if isinstance(data, dict) else []:
        for kind in (SERVERS, AGENTS):
            servers = value.get(kind) if isinstance(value, dict) else None
            for name, spec in (servers or {}).items() if isinstance(servers, dict) else []:
                if isinstance(spec, dict) and isinstance(spec.get("entrypoint"), str):
                    found.append((kind, name, spec["entrypoint"]))
    return found


def judge_started(dist: Distribution, text: str) -> list[str]:
    """What keeps the servers a config starts from running: an entrypoint that starts no server, and what the code
    of the agents it pairs with does (the code rules, as for the resources server's own code)."""
    rule = _rules()["entrypoint"]
    blockers = []
    for kind, name, entrypoint in _started_servers(text):
        file = f"{kind}/{name}/{entrypoint}"
        source = dist.read(file)
        if source is not None and not re.search(rule["starts"], source, re.M):
            blockers.append(rule["blocker"].format(file=file))
        for started in _rules().get("entrypoint_code", []):
            found = re.search(started["pattern"], source or "", re.M)
            if found:
                blockers.append(started["blocker"].format(match=f"{found.group(0).strip()} in {file}"))
        if kind == AGENTS:
            blockers += _agent_blockers(dist, f"{AGENTS}/{name}")
    return list(dict.fromkeys(blockers))


def usable_configs(dist: Distribution, configs: list[str]) -> tuple[list[str], dict[str, tuple[list[str], list[str]]]]:
    """The configs nothing declared keeps from starting here, and every config's (blockers, notes)."""
    judged = {}
    for config in configs:
        text = dist.read(config) or ""
        blockers, notes = judge_config(text)
        judged[config] = (blockers + judge_started(dist, text), notes)
    return [c for c in configs if not judged[c][0]], judged


def _recorded_config_blockers(
    dist: Distribution, name: str, configs: list[str], usable: list[str], judged: dict
) -> list[str]:
    """Why the configs a server's recordings ran with (those declaring the agent they name) cannot start here,
    when none of them can: replayed from another config, its rows would reach an agent they do not name."""
    agents = set(recorded_agents(dist, name))
    ran_with = [c for c in configs if agents & set(_declared_keys(dist.read(c) or ""))]
    if not ran_with or set(ran_with) & set(usable):
        return []
    why = "; ".join(dict.fromkeys(b for c in ran_with for b in judged[c][0]))
    return [f"the configs its recordings ran with ({', '.join(ran_with)}) cannot start here: {why}"]


def _declared_keys(text: str) -> list[str]:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return []
    return [str(k) for k in data] if isinstance(data, dict) else []


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
        requirements = _requirements(dist.read(f"{SERVERS}/{name}/requirements.txt") or "")
        item.blockers = judge(requirements, code_files(dist, f"{SERVERS}/{name}"))
        item.usable, judged = usable_configs(dist, configs)
        if configs and not item.usable:  # no config starts it here: say why the first one cannot
            item.blockers += judged[configs[0]][0]
        elif not item.cases and not item.blockers:  # it runs as its recordings ran, or not at all
            item.blockers += _recorded_config_blockers(dist, name, configs, item.usable, judged)
        item.notes = list(dict.fromkeys(n for c in item.usable for n in judged[c][1]))
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
        ran = [replayed[c] for c in item.cases or [item.name] if c in replayed]  # no case: run as derived
        reproduce = ", ".join(f"{f.reproduce}/{f.replays}" for f in ran) or "—"
        why_not = "; ".join(item.blockers) if not item.runnable else item.unjudgeable
        here = f"no: {why_not}" if why_not else "yes: nothing declared against it"
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
