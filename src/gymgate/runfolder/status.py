"""The typed records of a session's live state: an environment's start-up status (services/<env>.json, and each
entry of `gymgate up`'s services.json) and a worker's record (workers/<worker>.json).

`to_json()` gives exactly the keys the files hold (a field that was never set is left out, as before these types
existed); `from_json()` reads them back, ignoring keys it does not know.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from gymgate.outcomes import EnvState
from gymgate.text import strip_ansi


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"a {cls.__name__} is a JSON object, not {type(data).__name__}")
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _without_unset(data: dict[str, Any], optional: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k in optional and v is None)}


@dataclass
class EnvStatus:
    """Where one environment's Gym is in its start-up. `worker` and `at` are set when a session writes it to
    services/<env>.json (who started it, when); `gymgate up`'s services.json entries have neither."""

    env: str
    status: EnvState
    reason: str = ""
    seconds: float = 0.0
    servers: list[dict[str, Any]] = field(default_factory=list)
    log: str = ""
    blame: str = ""  # for a failed start: gym, or harness (gymgate.outcomes.Blame)
    worker: str | None = None
    at: float | None = None  # time.time() of the write
    wave: int | None = None  # which of its worker's waves started it (session.controller: --max-envs)
    instance: str | None = None  # the Gym instance it shares with other environments (services/sharing.py)

    OPTIONAL: ClassVar[tuple[str, ...]] = ("worker", "at", "wave", "instance")  # left out of the JSON while None

    def __post_init__(self) -> None:
        self.status = EnvState(self.status)
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, int | float):
            raise TypeError(f"{self.env}: seconds is {self.seconds!r}, not a number")

    def to_json(self) -> dict[str, Any]:
        data = {**asdict(self), "status": str(self.status), "reason": strip_ansi(self.reason)}
        return _without_unset(data, self.OPTIONAL)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EnvStatus:
        return cls(**_known(cls, data))


@dataclass
class WorkerRecord:
    """What one session worker planned, started and stopped. Written when its Gyms launch (up to
    `launched_after_s`) and again when it stopped (the rest); `namespace`, `named_actors` and `endpoint_requests`
    only by a pytest worker, not by `gymgate up`."""

    worker: str
    gcs: str = ""
    namespace: str | None = None
    planned: list[str] | None = None
    launched_after_s: float | None = None
    ready_seconds: float | None = None
    named_actors: list[str] | None = None  # every named Ray actor alive just before the stop
    endpoint_requests: int | None = None
    stop_errors: dict[str, list[str]] | None = None  # per environment: what did not stop within its bound
    stop_seconds: float | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = (  # left out of the JSON while None
        "namespace",
        "planned",
        "launched_after_s",
        "ready_seconds",
        "named_actors",
        "endpoint_requests",
        "stop_errors",
        "stop_seconds",
    )

    def to_json(self) -> dict[str, Any]:
        return _without_unset(asdict(self), self.OPTIONAL)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerRecord:
        return cls(**_known(cls, data))
