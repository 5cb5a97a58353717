"""How option values are read from text (a flag's argument, or its GYMGATE_* variable): each refuses what it
cannot read with a message naming what it expected."""

from __future__ import annotations

import argparse

MAX_WORKERS = 64
MAX_SECONDS = 86400.0
MAX_RERUNS = 10
MAX_ATTEMPTS = 10
MAX_LIVE_ENVS = 64


def workers(value: str) -> str:
    if value == "auto" or (value.isdigit() and int(value) <= MAX_WORKERS):
        return value
    raise argparse.ArgumentTypeError(f"expected 'auto' or a number of workers (0-{MAX_WORKERS}), got {value!r}")


def seconds(value: str) -> float:
    try:
        parsed = float(value)
    except ValueError:
        parsed = -1.0
    if 0 < parsed <= MAX_SECONDS:
        return parsed
    raise argparse.ArgumentTypeError(f"expected a number of seconds (0-{MAX_SECONDS:g}], got {value!r}")


def reruns(value: str) -> int:
    if value.isdigit() and int(value) <= MAX_RERUNS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of reruns (0-{MAX_RERUNS}), got {value!r}")


def attempts(value: str) -> int:
    if value.isdigit() and 1 <= int(value) <= MAX_ATTEMPTS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of attempts (1-{MAX_ATTEMPTS}), got {value!r}")


def live_envs(value: str) -> int:
    if value.isdigit() and 1 <= int(value) <= MAX_LIVE_ENVS:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a number of environments (1-{MAX_LIVE_ENVS}), got {value!r}")


def env_names(raw: str) -> list[str]:
    """GYMGATE_ENVS: names separated by commas or spaces."""
    names = [n for n in raw.replace(",", " ").split() if n]
    if not names:
        raise ValueError("no environment named")
    return names
