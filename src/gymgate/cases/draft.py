"""Drafting a case for a Gym environment (`gymgate case new`): its config and servers found in the Gym, an example row
pinned by SHA256, the model's accepted and rejected scripts drafted from what the row declares (drafting.toml), and —
after both paths ran on the real Gym — the observed reward and verifier fields written as the expected values. The
draft keeps its [draft] table in every case: a person reviews it and removes the mark (cases/environments.py refuses
unreviewed drafts)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
import yaml

from gymgate.cases.case import RETURNED
from gymgate.cases.gym_layout import SERVERS, server_configs, server_files
from gymgate.compare.observation import rules
from gymgate.endpoint.script import UNSCRIPTED
from gymgate.errors import UsageError
from gymgate.pathid import MODES
from gymgate.refs.distribution import Distribution
from gymgate.runfolder import PathRecord
from gymgate.runfolder.record import RESULT

RULES = tomllib.loads(Path(__file__).with_name("drafting.toml").read_text())
TOP_REWARD = 1.0
WRONG_TEXT = "gymgate-wrong-answer"


@dataclass
class GymConfig:
    """Where an environment is declared in a Gym: its config file and the server instances in it."""

    path: str
    server_key: str  # the resources server's instance name in the config
    agent_key: str  # the agent instance that uses it
    agent_type: str  # responses_api_agents/<agent_type>
    example: str | None  # the agent's declared example dataset
    judge: bool  # the resources server is judged by a model (judge_model_server)


@dataclass
class Draft:
    name: str
    config: GymConfig
    server_dir: str
    row_file: str
    line: int
    sha256: str
    transforms: list[str]
    modes: dict[str, dict[str, Any]]  # mode -> {"turns": [...], "judge": "..."}
    row: dict[str, Any] = field(default_factory=dict)  # the pinned example row, as Gym ships it
    judge_markers: list[str] = field(default_factory=list)  # text only the judge's prompt holds (set by a person)
    problems: list[str] = field(default_factory=list)  # what a person must finish


def pairings(dist: Distribution, server: str, wanted: str | None = None) -> list[GymConfig]:
    """Every (config, agent) pairing that declares resources server `server` (the folder name), the config named
    after the server first (`wanted`: that config only)."""
    configs = server_configs(server_files(dist, server))
    if not configs:
        raise UsageError(f"the Gym has no config for resources server {server!r} ({SERVERS}/{server}/configs/)")
    if wanted is not None:
        if wanted not in configs:
            raise UsageError(f"{wanted} is not one of {server}'s configs: {', '.join(configs)}")
        configs = [wanted]
    else:
        configs.sort(key=lambda c: (Path(c).stem not in (server, "config"), c))
    found = []
    for path in configs:
        data = yaml.safe_load(dist.read(path) or "") or {}
        servers = {
            k: v["resources_servers"] for k, v in data.items() if isinstance(v, dict) and "resources_servers" in v
        }
        server_key = next((k for k, v in servers.items() if isinstance(v, dict) and server in v), None)
        if server_key is None:
            continue
        for key, value in data.items():
            agents = value.get("responses_api_agents") if isinstance(value, dict) else None
            for agent_type, spec in (agents or {}).items():
                if isinstance(spec, dict) and (spec.get("resources_server") or {}).get("name") == server_key:
                    example = next(
                        (d.get("jsonl_fpath") for d in spec.get("datasets") or [] if d.get("type") == "example"), None
                    )
                    judged = "judge_model_server" in (servers[server_key].get(server) or {})
                    found.append(GymConfig(path, server_key, key, agent_type, example, judged))
    if not found:
        raise UsageError(f"no config of {server} pairs its resources server with an agent: {', '.join(configs)}")
    return found


def find_config(dist: Distribution, server: str, wanted: str | None = None) -> GymConfig:
    """The config declaring resources server `server` and the agent that uses it (the first pairing)."""
    return pairings(dist, server, wanted)[0]


def _first(row: dict[str, Any], names: list[str]) -> tuple[str, Any] | None:
    return next(((n, row[n]) for n in names if row.get(n) not in (None, "")), None)


def _prompt(row: dict[str, Any]) -> str:
    params = row.get("responses_create_params") or {}
    parts = [params.get("instructions") or ""]
    for item in params.get("input") or []:
        content = item.get("content") if isinstance(item, dict) else None
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


def _wrong(answer: Any) -> Any:
    """A different answer of the same kind."""
    if isinstance(answer, bool):
        return not answer
    if isinstance(answer, int | float):
        return answer + 1
    text = str(answer)
    if len(text) == 1 and text.isalpha():
        return "B" if text.upper() == "A" else "A"
    if text.lstrip("-").isdigit():
        return str(int(text) + 1)
    return WRONG_TEXT


def _calls(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls the row expects ({name, arguments} each), or [] when it declares none."""
    for name in RULES["action_fields"]:
        value = row.get(name)
        items = value if isinstance(value, list) else [value]
        if value and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
            calls = []
            for item in items:
                arguments = item.get("arguments") or {}
                calls.append(
                    {
                        "name": item["name"],
                        "arguments": json.loads(arguments) if isinstance(arguments, str) else dict(arguments),
                    }
                )
            return calls
    return []


def draft_scripts(row: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The accepted and rejected scripts the row's own fields stand for, and what could not be drafted."""
    calls = _calls(row)
    if calls:
        wrong = [dict(c, arguments=dict(c["arguments"])) for c in calls]
        if wrong[0]["arguments"]:
            first = sorted(wrong[0]["arguments"])[0]
            wrong[0]["arguments"][first] = _wrong(wrong[0]["arguments"][first])
        else:
            wrong[0]["name"] = f"{wrong[0]['name']}_not"
        return {"accepted": {"turns": [{"tool_calls": calls}]}, "rejected": {"turns": [{"tool_calls": wrong}]}}, []
    answer = _first(row, RULES["answer_fields"])
    if answer is None:
        wanted = ", ".join(RULES["answer_fields"] + RULES["action_fields"])
        return {m: {"turns": [{"content": ""}]} for m in MODES}, [
            f"the row declares no answer or expected action ({wanted}): write both modes' turns by hand"
        ]
    _, value = answer
    prompt = _prompt(row)
    form = next(f["format"] for f in RULES["answer_format"] if f.get("when", "") in prompt)
    return {
        "accepted": {"turns": [{"content": form % value}]},
        "rejected": {"turns": [{"content": form % _wrong(value)}]},
    }, []


def draft_case(dist: Distribution, name: str, server: str, line: int, config: str | None = None) -> Draft:
    found = find_config(dist, server, config)
    row_file = found.example or next(
        (f for f in dist.files(f"{SERVERS}/{server}/data") if f.endswith("example.jsonl")), None
    )
    text = dist.read(row_file) if row_file else None
    if not text:
        raise UsageError(f"{server} has no example data to draft a case from")
    lines = text.splitlines(keepends=True)
    if not 0 <= line < len(lines):
        raise UsageError(f"{row_file} has {len(lines)} rows; --row {line} is not one of them")
    raw = lines[line]
    row = json.loads(raw)
    transforms = ["add_agent_ref"]
    modes, problems = draft_scripts(row)
    if found.judge:
        problems.append(
            "its verifier asks a judge model: set judge_markers (text only the judge's prompt holds) and each mode's "
            "judge verdict by hand"
        )
    return Draft(
        name=name,
        config=found,
        server_dir=f"{SERVERS}/{server}",
        row_file=row_file,
        line=line,
        sha256=hashlib.sha256(raw.encode()).hexdigest(),
        transforms=transforms,
        modes=modes,
        row=row,
        problems=problems,
    )


CLOSING_TURN = {"content": "Done."}
MAX_TURNS = 4


def wants_another_turn(records: dict[str, PathRecord]) -> bool:
    """The agent asked the model again after the scripted turns (it ran the tool calls and wants an answer)."""
    return any(UNSCRIPTED in (r.reason or "") for r in records.values())


def add_closing_turn(draft: Draft) -> bool:
    """One more reply in both modes: after tool calls a plain closing line, after an answer the same answer again
    (a multi-turn environment may judge only the last). False once the scripts are as long as a draft goes."""
    if any(len(m["turns"]) >= MAX_TURNS for m in draft.modes.values()):
        return False
    for mode in draft.modes.values():
        last = mode["turns"][-1]
        answered = last.get("content") and not last.get("tool_calls")
        mode["turns"].append({"content": last["content"]} if answered else dict(CLOSING_TURN))
    return True


def _masked(key: str, value: Any) -> bool:
    return any(rule.applies(f"{RESULT}.{key}", value) for rule in rules())


def observed_expect(record: PathRecord, row: dict[str, Any]) -> dict[str, Any]:
    """What the verifier said: the reward and every scalar top-level field of Gym's result that the row did not
    already hold (ids and timestamps left out)."""
    result = (record.observed or {}).get(RESULT) or {}
    found: dict[str, Any] = {"reward": result.get("reward")}
    for key, value in sorted(result.items()):
        if (
            key in ("reward", "response")
            or key.startswith("_")
            or isinstance(value, dict | list)
            or row.get(key) == value
        ):
            continue  # the response, Gym's own bookkeeping (_rowidx), nested values, the row's echo
        if value is None or _masked(key, value):
            continue
        found[key] = value
    return found


def observed_metadata(record: PathRecord, row: dict[str, Any], server: str) -> dict[str, str]:
    """The row's fields as they came back in Gym's result ([row.metadata]): `returned` when unchanged, else why."""
    result = (record.observed or {}).get(RESULT) or {}
    return {
        key: RETURNED
        if result.get(key, _ABSENT) == value
        else f"not returned: {server}'s verify response does not carry it"
        for key, value in row.items()
        if key not in ("responses_create_params", "agent_ref")
    }


def observed_tool_outputs(record: PathRecord) -> list[str]:
    """Every tool output in Gym's result, in order: the golden values a person reviews."""
    result = (record.observed or {}).get(RESULT) or {}
    output = (result.get("response") or {}).get("output") or []
    return [i.get("output") for i in output if i.get("type") == "function_call_output"]


_ABSENT = object()


def separation(records: dict[str, PathRecord]) -> list[str]:
    """Why the two modes do not tell a working environment from a broken one (empty: they do)."""
    why = []
    accepted, rejected = records.get("accepted"), records.get("rejected")
    for mode, record in (("accepted", accepted), ("rejected", rejected)):
        if record is None or record.outcome != "PASS":
            reason = record.reason.splitlines()[0] if record and record.reason else "no record"
            why.append(f"{mode} did not run cleanly: {record.outcome if record else 'ERROR'} — {reason}")
    if why:
        return why
    if accepted.reward != TOP_REWARD:
        why.append(f"accepted earned reward {accepted.reward}, not the top reward {TOP_REWARD}")
    if rejected.reward is None or (accepted.reward is not None and rejected.reward >= accepted.reward):
        why.append(f"rejected earned reward {rejected.reward}, not less than accepted ({accepted.reward})")
    return why


def render(
    draft: Draft,
    expects: dict[str, dict[str, Any]],
    why_draft: str,
    metadata: dict[str, str] | None = None,
    tool_outputs: dict[str, list[str]] | None = None,
) -> str:
    """The case file: every field a hand-written case has (the row's metadata and the golden tool outputs once the
    paths ran), and the [draft] mark."""
    data: dict[str, Any] = {
        "environment": {
            "name": draft.name,
            "config": draft.config.path,
            "resources_server": draft.config.server_key,
            "agent": draft.config.agent_key,
            "server_dirs": [draft.server_dir, f"responses_api_agents/{draft.config.agent_type}"],
            **({"judge_markers": draft.judge_markers} if draft.judge_markers else {}),
        },
        "row": {"file": draft.row_file, "line": draft.line, "sha256": draft.sha256, "transforms": draft.transforms},
    }
    if metadata is not None:
        data["row"]["metadata"] = metadata
    for mode in MODES:
        data[mode] = {**draft.modes[mode], "expect": expects.get(mode, {})}
        if tool_outputs is not None and mode in tool_outputs:
            data[mode]["tool_outputs"] = tool_outputs[mode]
    data["draft"] = {"why": why_draft}
    header = f"# {draft.name}: drafted by `nox -s case -- new`. Review it, then delete the [draft] table.\n"
    return header + tomli_w.dumps(data)


def keep_scripts(draft: Draft, written: str) -> None:
    """Take the scripts a person finished in an earlier draft (turns, judge verdicts, judge markers) instead of the
    drafted ones: `case new --keep-scripts` reruns them and writes what they earn."""
    data = tomllib.loads(written)
    for mode in MODES:
        kept = {"turns": data[mode]["turns"]}
        if data[mode].get("judge"):
            kept["judge"] = data[mode]["judge"]
        draft.modes[mode] = kept
    draft.judge_markers = list(data["environment"].get("judge_markers", []))
    draft.problems = [p for p in draft.problems if "write both modes' turns" not in p and "judge" not in p]
