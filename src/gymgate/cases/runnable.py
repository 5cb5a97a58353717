"""What keeps a Gym server from running here, read from what the Gym declares — its requirements, its code, its
configs, the files a config starts, the agents it pairs with — by the rules in runnable.toml (data, reviewed like
code). `catalog.py` lists the verdicts; `derived.py` runs a server from a config nothing blocks."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from functools import cache
from pathlib import Path

import yaml

from gymgate.cases.gym_layout import AGENTS, SERVERS, code_files, recorded_agents
from gymgate.recordings.read import GymFiles

RULES_FILE = Path(__file__).with_name("runnable.toml")


@cache
def _rules() -> dict:
    return tomllib.loads(RULES_FILE.read_text())


def requirements_of(text: str) -> list[str]:
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


@cache
def _agent_blockers(dist: GymFiles, folder: str) -> tuple[str, ...]:
    """The code rules applied to an agent's folder (read once per Gym: many servers share an agent)."""
    return tuple(judge([], code_files(dist, folder)))


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


def judge_started(dist: GymFiles, text: str) -> list[str]:
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


def usable_configs(dist: GymFiles, configs: list[str]) -> tuple[list[str], dict[str, tuple[list[str], list[str]]]]:
    """The configs nothing declared keeps from starting here, and every config's (blockers, notes)."""
    judged = {}
    for config in configs:
        text = dist.read(config) or ""
        blockers, notes = judge_config(text)
        judged[config] = (blockers + judge_started(dist, text), notes)
    return [c for c in configs if not judged[c][0]], judged


def recorded_config_blockers(
    dist: GymFiles, name: str, configs: list[str], usable: list[str], judged: dict
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
