"""The acceptance environments, read from the declarative files in cases/: one case file per environment, and
cases/sets.toml naming sets of them — `default` is what runs when nothing is selected."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.locations import repo_root
from gymgate.variants.sessions import SessionDecl

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
    # An environment without a case (cases/derived.py): the Gym config it was derived from, its example rows, and
    # whether that config has its server judged by a model.
    derived_from: str = ""
    example: str = ""
    judged: bool = False
    # The case's [session] table: its agent runs tool calls in one session, and which calls only read it (session
    # variants: gymgate.variants.sessions); None: not declared, and no session variant fits.
    session: SessionDecl | None = None
    # False: the case runs another case's server with its config changed (a judge turned on), so the recordings
    # Gym ships for that server were made under another config and are not replayed as this environment's.
    replays: bool = True

    @property
    def has_case(self) -> bool:
        return self.case_file is not None

    @property
    def ran_from(self) -> str:
        """For an environment without a case, the configuration it runs from (what a report says ran)."""
        if not self.derived_from:
            return ""
        routed = "; judge and model servers routed to gymgate's endpoint" if self.overrides else ""
        return f"Gym's {self.derived_from}, agent {self.agent}{routed}"

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


def _session(case: dict, path: Path) -> SessionDecl | None:
    if "session" not in case:
        return None
    try:
        return SessionDecl.from_data(case["session"], str(path))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


SETS_FILE = "sets.toml"
DEFAULT_SET = "default"
ALL_SET = "all"  # no file lists it: every case, and every runnable environment of the ref (cases/derived.py)


def all_environments() -> list[Environment]:
    """Every case in cases/, drafts included."""
    envs = []
    for path in sorted(cases_dir().glob("*.toml")):
        if path.name == SETS_FILE:
            continue
        try:
            whole = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path} is not valid TOML ({exc}); fix it or move it out of {path.parent}") from None
        data = whole.get("environment")
        if not data:
            raise UsageError(f"{path} has no [environment] table")
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
                session=_session(whole, path),
                replays=bool(data.get("replays", True)),
            )
        )
    return envs


def environment_sets() -> dict[str, list[str]]:
    """cases/sets.toml's named sets; without the file, `default` is every case."""
    path = cases_dir() / SETS_FILE
    if not path.is_file():
        return {DEFAULT_SET: [e.name for e in all_environments()]}
    return {str(k): [str(n) for n in v] for k, v in tomllib.loads(path.read_text()).get("sets", {}).items()}


def names_asked(envs: list[str] | None, env_set: str | None) -> list[str] | None:
    """The environments a command was asked for: --env names, plus --env-set's; None when neither was given."""
    if env_set is None:
        return envs
    if env_set == ALL_SET:  # every reviewed case here; the harness adds the ref's other runnable environments
        cases = [e.name for e in all_environments() if not e.draft]
        return list(dict.fromkeys([*cases, *(envs or [])]))
    sets = environment_sets()
    if env_set not in sets:
        raise UsageError(f"unknown environment set {env_set!r}; cases/{SETS_FILE} names: {', '.join(sorted(sets))}")
    return list(dict.fromkeys([*sets[env_set], *(envs or [])]))


def refuse_drafts(envs: list[Environment]) -> None:
    """A drafted case is not trusted until a person reviewed it and removed its [draft] table."""
    drafts = [e for e in envs if e.draft]
    if drafts:
        listed = ", ".join(f"{e.name} ({e.case_file})" for e in drafts)
        raise UsageError(
            f"unreviewed drafted case(s): {listed}. Review each one's scripts and expected values, then delete its "
            "[draft] table; or leave it out with --env"
        )
