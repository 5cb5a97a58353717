"""The Gym ref an RL repository's uv.lock pins: what a CI job on a bump PR judges (the lock at the PR's head) and
judges it against (the lock at its base)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gymgate.errors import EXIT_OK, UsageError

GYM_PACKAGE = "nemo-gym"


def gym_ref_of_lock(text: str, where: str = "uv.lock") -> str:
    """A version for nemo-gym from a package index, the commit for a git source; anything else is a usage error
    (a local path names no ref another machine can build)."""
    try:
        packages = tomllib.loads(text).get("package", [])
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{where} is not a uv lock ({exc})") from None
    found = [p for p in packages if p.get("name") == GYM_PACKAGE]
    if not found:
        raise UsageError(f"{where} does not lock {GYM_PACKAGE}")
    if len(found) > 1:
        raise UsageError(f"{where} locks {GYM_PACKAGE} {len(found)} times (forked resolution); pass --gym-ref yourself")
    package = found[0]
    source = package.get("source", {})
    if "registry" in source:
        return str(package["version"])
    if "git" in source:
        commit = source["git"].rpartition("#")[2]
        if len(commit) == 40:
            return commit
        raise UsageError(f"{where} locks {GYM_PACKAGE} from git without a commit: {source['git']}")
    raise UsageError(
        f"{where} locks {GYM_PACKAGE} from {source or 'an unknown source'}: a local path is no ref another machine "
        "can build; pass --gym-ref with the checkout (or the commit it is at)"
    )


def gym_ref_of_command(lock: Path) -> int:
    """`gymgate gym-ref-of UV_LOCK`: print the Gym ref a lock pins."""

    try:
        text = lock.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {lock}: {exc}") from None
    print(gym_ref_of_lock(text, str(lock)))
    return EXIT_OK
