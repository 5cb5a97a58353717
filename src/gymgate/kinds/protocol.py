"""What a kind of path is: the calls the planner and the runner make into it, each with the behaviour every kind
that does not say otherwise has. A kind's module implements this once (pathkinds.toml names the module); nothing
outside it asks which kind a path is to decide what to do with it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gymgate.cases.environments import Environment
from gymgate.endpoint.script import Script
from gymgate.paths.spec import PathSpec
from gymgate.recordings.read import Recording
from gymgate.runfolder import PathRecord, RunFolder
from gymgate.selection import NONE


@dataclass(frozen=True)
class Planning:
    """What a plan is made from besides the environments: the recordings the refs ship, by environment, and each
    kind's selection (`--faults`, `--variants`: gymgate.selection) by the kind's name; a kind not named plans none
    of the paths it plans only when asked for."""

    recordings: Mapping[str, Sequence[Recording]] = field(default_factory=dict)
    selections: Mapping[str, str] = field(default_factory=dict)
    # Each case's row as a ref ships it (after its transforms), by environment, where the plan could read it: a form
    # that reads the row fits the row itself, not only the answer (absent: it fits for now, and again when fed).
    rows: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    def selection(self, kind: str) -> str:
        return self.selections.get(kind, NONE)


class PathContext(Protocol):
    """What a kind reads of the run a path is in (gymgate.runner.path.RunContext)."""

    run: RunFolder
    gym: dict[str, Any]
    discard: Callable[[str, str], None] | None


@dataclass
class Prepared:
    """What a path runs with once its row is known: the model's script, and what its own checks judge against
    (a variant's oracle: its original's verdict on this Gym, and where it came from)."""

    script: Script
    oracle: Any = None
    oracle_from: str = ""
    row: dict[str, Any] | None = None  # the row the path is fed instead of the one it was given (a row variant's)


Check = tuple[str, Callable[[], object]]  # a check's name (the failure kind it reports) and the call that runs it
RunPath = Callable[[PathSpec, RunFolder], PathRecord]  # runs another path once, into a run folder (an oracle)


class PathKind:
    """One kind of rollout path. `name` is its entry in pathkinds.toml (its names' grammar lives there)."""

    name: str = ""
    # True: the path's verdict — its reward, the failure markers a reviewed entry calls verdicts, how many times its
    # verifier asked the judge — is held to its original's by the kind's own checks (a variant: a reply read another
    # way may ask again or stop asking), not to the script's judge replies or the recording's marker values.
    verdict_of_original: bool = False

    # -- planning and the plan file ---------------------------------------------------------------------------------
    def plan(self, env: Environment, planned: list[PathSpec], given: Planning) -> list[PathSpec]:
        """This kind's paths of one environment, after `planned` (the paths of the kinds declared before it)."""
        return []

    def detail_to_json(self, detail: Any) -> Any:
        """The kind's own value (PathSpec.detail) as JSON, for the plan file."""
        return None

    def detail_from_json(self, data: Any) -> Any:
        return None

    # -- running, in the order the runner calls them (gymgate.runner.path) -----------------------------------------
    def cannot_run(self, path: PathSpec, result: PathRecord) -> None:
        """The path cannot run here (`path.cannot_run` says why): how that is recorded."""
        result.skip(f"cannot run here: {path.cannot_run}")

    def prepare(
        self, ctx: PathContext, path: PathSpec, fed: dict[str, Any], result: PathRecord, run: RunPath
    ) -> Prepared | None:
        """What the path runs with, given the row it is fed; None when it ends here (`result` says how)."""
        return Prepared(path.script)

    def injects(self, path: PathSpec) -> Any:
        """The fault the endpoint injects on this path's calls (gymgate.faults.catalogue.Fault), or None."""
        return None

    def rollout_raised(
        self, ctx: PathContext, path: PathSpec, result: PathRecord, seen: list, exc: BaseException
    ) -> bool:
        """The rollout raised: whether this kind judged it (else the runner blames whoever failed)."""
        return False

    def rollout_returned(self, path: PathSpec, result: PathRecord, exchanges: list, processed: dict) -> list | None:
        """The rollout returned: keep the observation; the exchanges the checks read, or None when the path is
        judged here alone (and `result` is complete)."""
        result.observe(((e.kind or e.route, e.status, e.body) for e in exchanges), processed["gym_result"])
        return exchanges

    def judged_as(self, path: PathSpec) -> PathSpec:
        """The path whose declarations (failure markers allowed, row fields echoed) this one is held to."""
        return path

    def checks(self, path: PathSpec, result: PathRecord, prepared: Prepared, processed: dict) -> list[Check]:
        """The kind's own checks, run after every check all paths get."""
        return []


class CatalogueDetail(PathKind):
    """A kind whose own value is an entry of a declared catalogue (a fault, a form), carried in the plan by its name;
    a name the catalogue does not hold is refused, naming the catalogue."""

    catalogue_file: str = ""  # what a refusal names

    def entries(self) -> Sequence[Any]:
        raise NotImplementedError

    def detail_to_json(self, detail: Any) -> Any:
        return detail.name

    def detail_from_json(self, data: Any) -> Any:
        found = {e.name: e for e in self.entries()}
        if data not in found:
            raise ValueError(f"no entry {data!r} in {self.catalogue_file}")
        return found[data]
