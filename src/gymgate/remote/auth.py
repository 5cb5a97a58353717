"""Joining a Ray cluster that uses token authentication (`--ray-address`): the token is the user's, taken where Ray
itself looks for it (RAY_AUTH_TOKEN, then the file RAY_AUTH_TOKEN_PATH names, then ~/.ray/auth_token). gymgate never
reads, prints or writes it: the dispatch's driver leaves it to Ray (remote/driver.connect_problem), and gymgate names
where it came from when the cluster refuses it. No run on a node, nor any run here, ever sees it (their
environments carry none of the user's Ray variables: processes.run_environment, remote/node.allowed).

Standard library only: the driver imports it under the cluster's Python, where gymgate is not installed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

MODE = "RAY_AUTH_MODE"
TOKEN = "RAY_AUTH_TOKEN"
TOKEN_PATH = "RAY_AUTH_TOKEN_PATH"
TOKEN_MODE = "token"


def default_token_file(environ: Mapping[str, str]) -> Path:
    """Ray's per-user token file, under the HOME the driver runs with."""
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".ray" / "auth_token"


def token_source(environ: Mapping[str, str]) -> str:
    """Where Ray would take the token from, by name and never by value ('' when nowhere), in Ray's own order."""
    if environ.get(TOKEN, "").strip():
        return f"${TOKEN}"
    if environ.get(TOKEN_PATH):
        return f"the file ${TOKEN_PATH} names ({environ[TOKEN_PATH]})"
    if default_token_file(environ).is_file():
        return str(default_token_file(environ))
    return ""


def misconfigured(environ: Mapping[str, str]) -> str:
    """A token setting Ray would abort the driver on (a RAY_AUTH_TOKEN_PATH naming no readable, non-empty file), said
    before anything starts; '' when there is none."""
    if environ.get(TOKEN, "").strip() or not environ.get(TOKEN_PATH):
        return ""
    path = Path(environ[TOKEN_PATH]).expanduser()
    try:
        empty = not path.read_bytes().strip()
    except OSError as exc:
        return (
            f"${TOKEN_PATH} names {path}, which cannot be read ({exc.strerror or exc}): name the cluster's token file"
        )
    return f"${TOKEN_PATH} names {path}, which is empty: name the cluster's token file" if empty else ""


def refusal(address: str, environ: Mapping[str, str]) -> str:
    """What to tell a user whose cluster turned the driver's token away, with what to do; the token never in it."""
    head = f"the Ray cluster at {address} refused gymgate's connection: it uses token authentication, and "
    source = token_source(environ)
    mode = environ.get(MODE, "")
    if mode and mode.lower() != TOKEN_MODE:
        said = f"${MODE}={mode} is set, so no token was sent"
    elif source:
        said = f"did not accept the token from {source}"
    else:
        said = f"no token was found (${TOKEN}, ${TOKEN_PATH}, {default_token_file(environ)})"
    return (
        f"{head}{said}. Give gymgate the cluster's token as Ray reads it: ${TOKEN}=<token>, or ${TOKEN_PATH}=<file "
        f"holding it>, or the file {default_token_file(environ)} (`ray get-auth-token` on the cluster's head prints "
        f"it); with ${MODE} unset, gymgate sends it once a HOST:PORT cluster asks for one (for ray://, set "
        f"${MODE}=token)"
    )
