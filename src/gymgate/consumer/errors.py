"""Typed, picklable rollout failures (they cross Ray from the Gym actor to the driver)."""

from __future__ import annotations


class RolloutError(Exception):
    """Base: a rollout that produced no usable training data."""

    category = "rollout"

    def __reduce__(self):
        return (type(self), self.args)


class GymTransportError(RolloutError):
    """Gym answered /run with >=500, 408 or 429: infrastructure, never a reward-0 sample."""

    category = "transport"


class RolloutDataFailure(RolloutError):
    """Gym answered /run with another non-2xx status."""

    category = "data"


class RejectedResult(RolloutError):
    """The run's RL profile rejects a result Gym marked as failed (`_ng_failure_class`) before reading its reward
    (RL after 006e44f3: `judge_failed` counts as a transport failure, any other class as data). `marked`: the
    class Gym gave."""

    category = "rejected"

    def __init__(self, message: str, marked: str = ""):
        super().__init__(message, marked)
        self.message, self.marked = message, marked

    def __str__(self) -> str:
        return self.message


class NonContiguousError(RolloutError):
    """A turn's prompt does not start with every token seen so far (history not carried faithfully)."""

    category = "continuity"

    def __init__(self, message: str, turn: int | None = None, position: int | None = None):
        super().__init__(message, turn, position)
        self.message, self.turn, self.position = message, turn, position

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.turn, self.position))


class NoGenerationData(RolloutError):
    category = "no_generation"


class NaNLogprobs(RolloutError):
    category = "nan_logprobs"


class RowIndexError(RolloutError):
    """Rollouts came back with a bad, duplicate or missing row index (fewer rollouts than requested)."""

    category = "row_count"


class RolloutTimeout(RolloutError):
    """The rollout did not return within the path's deadline (a Gym that hangs, e.g. in its verifier)."""

    category = "timeout"


class GymDied(RolloutError):
    """A process of the environment's Gym died while the rollout was waiting on it."""

    category = "gym died"


# What RL's failure taxonomy counts as infrastructure when /run fails without an HTTP status (a dropped or refused
# connection, a cut body, a timeout), by class name anywhere in the exception's classes: aiohttp's names, so this
# module needs no aiohttp.
TRANSPORT_NAMES = frozenset({"ClientConnectionError", "ClientPayloadError"})
CAUSE_DEPTH = 8  # how far down an exception's causes the classification looks


def _transport(exc: BaseException | None) -> bool:
    """Whether RL would count this failure (or one of its causes) as infrastructure rather than the row's data."""
    for _ in range(CAUSE_DEPTH):
        if exc is None:
            return False
        if isinstance(exc, TimeoutError | ConnectionError) or TRANSPORT_NAMES & {c.__name__ for c in type(exc).__mro__}:
            return True
        exc = exc.__cause__
    return False


def run_failure(exc: BaseException) -> Exception:
    """A /run failure as a picklable, typed error carrying Gym's response body (the useful part)."""
    status = getattr(exc, "status", None)
    content = getattr(exc, "response_content", b"") or b""
    if isinstance(content, bytes):
        content = content.decode(errors="replace")
    detail = f"{type(exc).__name__}: {exc}" + (f"; response: {content[:2000]}" if content else "")
    if status is None:
        if _transport(exc):
            return GymTransportError(f"/run failed without an HTTP status (a transport failure): {detail}")
        return RolloutDataFailure(f"/run failed without an HTTP status: {detail}")
    if status >= 500 or status in (408, 429):
        return GymTransportError(f"/run answered HTTP {status}: {detail}")
    return RolloutDataFailure(f"/run answered HTTP {status}: {detail}")
