"""The seven acceptance environments, read from the declarative files in cases/."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.locations import repo_root

# Every environment's model ref is `policy_model`; this config turns token-id information on.
MODEL_CONFIG = "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"
MODEL_SERVER_DIR = "responses_api_models/vllm_model"
MODEL_SERVER_NAME = "policy_model"


@dataclass(frozen=True)
class Environment:
    name: str
    config: str
    resources_server: str
    agent: str
    server_dirs: tuple[str, ...]
    overrides: dict[str, object] = field(default_factory=dict)
    judge_markers: tuple[str, ...] = ()
    case_file: Path | None = None
    draft: str = ""  # a case `gymgate case new` drafted, not yet reviewed by a person ([draft] table): never judged

    @property
    def all_server_dirs(self) -> tuple[str, ...]:
        return (*self.server_dirs, MODEL_SERVER_DIR)


def cases_dir() -> Path:
    """cases/ of the checkout; GYMGATE_CASES_DIR points elsewhere (fault-injection tests use it)."""
    explicit = os.environ.get("GYMGATE_CASES_DIR")
    return Path(explicit) if explicit else repo_root() / "cases"


def _draft(case: dict) -> str:
    """Why a case is a draft ({} -> not one). A [draft] table without a reason still marks it."""
    if "draft" not in case:
        return ""
    marked = case["draft"]
    return str(marked.get("why") or "drafted, not reviewed") if isinstance(marked, dict) else "drafted, not reviewed"


def load_environments(names: list[str] | None = None) -> list[Environment]:
    envs = []
    for path in sorted(cases_dir().glob("*.toml")):
        whole = tomllib.loads(path.read_text())
        data = whole.get("environment")
        if not data:
            raise ValueError(f"{path} has no [environment] table")
        envs.append(
            Environment(
                name=data["name"],
                config=data["config"],
                resources_server=data["resources_server"],
                agent=data["agent"],
                server_dirs=tuple(data["server_dirs"]),
                overrides=dict(data.get("overrides", {})),
                judge_markers=tuple(data.get("judge_markers", ())),
                case_file=path,
                draft=_draft(whole),
            )
        )
    if names is None:
        return envs
    by_name = {e.name: e for e in envs}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown environment(s) {', '.join(unknown)}; known: {', '.join(sorted(by_name))}")
    return [by_name[n] for n in names]


def refuse_drafts(envs: list[Environment]) -> None:
    """A drafted case is not trusted until a person reviewed it and removed its [draft] table."""
    drafts = [e for e in envs if e.draft]
    if drafts:
        listed = ", ".join(f"{e.name} ({e.case_file})" for e in drafts)
        raise UsageError(
            f"unreviewed drafted case(s): {listed}. Review each one's scripts and expected values, then delete its "
            "[draft] table; or leave it out with --env"
        )
