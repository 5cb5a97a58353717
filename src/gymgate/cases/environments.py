"""The acceptance environments, read from the declarative files in cases/: one case file per environment, and
cases/sets.toml naming sets of them — `default` is what runs when nothing is selected.

An RL repository adds its own (`--cases DIR`, or `cases` in its gymgate.toml): its folders are read before gymgate's,
so its case of an environment gymgate also has a case for is the one that runs, and its sets.toml adds sets (or
replaces one of the same name)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gymgate.errors import UsageError
from gymgate.locations import case_dirs, cases_dir, installed, own_case_dirs
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


def new_case_dir() -> Path:
    """Where `gymgate case new` writes: the repository's first case folder; gymgate's own cases/ only in its checkout."""
    own = own_case_dirs()
    if own:
        return own[0]
    if installed():
        raise UsageError(
            "gymgate case new writes your cases into your repository: pass --cases DIR, or set `cases` in your "
            "gymgate.toml (gymgate init writes one)"
        )
    return cases_dir()


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


def all_environments(folders: list[Path] | None = None) -> list[Environment]:
    """Every case in the case folders (default: all of them), drafts included; a name's first case only (the
    repository's over gymgate's)."""
    envs: list[Environment] = []
    folders = case_dirs() if folders is None else folders
    files = [path for folder in folders for path in sorted(folder.glob("*.toml")) if path.name != SETS_FILE]
    for path in files:
        try:
            whole = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path} is not valid TOML ({exc}); fix it or move it out of {path.parent}") from None
        data = whole.get("environment")
        if not data:
            raise UsageError(f"{path} has no [environment] table")
        if any(e.name == data["name"] for e in envs):
            continue
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


def shipped_servers() -> set[str]:
    """The server folders gymgate's own cases run: what a pin's committed environment carries the requirements of."""
    return {d for env in all_environments([cases_dir()]) for d in env.all_server_dirs}


def needs_wide(envs: list[Environment]) -> bool:
    """An environment without a case, or a repository's case running a server no case of gymgate's runs: their
    servers' requirements are in the ref's wide environment only."""
    shipped = shipped_servers()
    return any(not env.has_case or not set(env.all_server_dirs) <= shipped for env in envs)


def environment_sets() -> dict[str, list[str]]:
    """The named sets of every case folder's sets.toml (the repository's replace gymgate's of the same name);
    without any such file, `default` is every case."""
    sets: dict[str, list[str]] = {}
    for folder in reversed(case_dirs()):
        path = folder / SETS_FILE
        if path.is_file():
            sets.update(
                {str(k): [str(n) for n in v] for k, v in tomllib.loads(path.read_text()).get("sets", {}).items()}
            )
    return sets or {DEFAULT_SET: [e.name for e in all_environments()]}


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
