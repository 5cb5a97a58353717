"""How a Gym lays out its servers (resources_servers/<name>/ with configs/ and data/, responses_api_agents/<type>/)
and what its files name: the one place these paths and names are spelled out."""

from __future__ import annotations

import json
import re

from gymgate.recordings.read import RECORDINGS, GymFiles

SERVERS = "resources_servers"
AGENTS = "responses_api_agents"
ENVIRONMENTS = "environments"  # Gym >= 0.4.0: an environment's own folder (config.yaml, data/)
EXAMPLE = re.compile(r"/data/[^/]*example[^/]*\.jsonl$")  # input rows (not example_rollouts*.jsonl: outputs)


def server_files(dist: GymFiles, name: str) -> list[str]:
    """A server's files: its resources_servers/ folder and (Gym >= 0.4.0) its environments/ folder."""
    return [f for folder in (f"{SERVERS}/{name}", f"{ENVIRONMENTS}/{name}") for f in dist.files(folder)]


def server_configs(files: list[str]) -> list[str]:
    return [f for f in files if f.endswith((".yaml", ".yml")) and ("/configs/" in f or f.endswith("/config.yaml"))]


def code_files(dist: GymFiles, folder: str) -> dict[str, str]:
    """A server's own code (tests aside) and its pyproject.toml (where it says its dependencies come from)."""
    return {
        f: dist.read(f) or ""
        for f in dist.files(folder)
        if (f.endswith(".py") or f.endswith("/pyproject.toml"))
        and "/tests/" not in f
        and not f.rsplit("/", 1)[1].startswith("test_")
    }


def recorded_agents(files: GymFiles, server: str) -> list[str]:
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
