"""Every difference between Gym versions that gymgate's service code must know, in one place.

- 0.2.0 ships `nemo_gym.cli` importing an unpackaged `scripts` module: a shim directory is put on
  sys.path and PYTHONPATH (so Gym's server children inherit it) when, and only when, that import fails.
- `RunHelper` lives in `nemo_gym.cli` up to 0.3.x and in `nemo_gym.cli.env` from 0.4.0 (the old
  name stays as a deprecated shim there): the new home is tried first.
- structured_outputs_v4 exists from 0.3.0: decided by the config file being present, not by version.
- 0.7.0 adds a server type, `environment_servers/` (`legacy_agent`, `single_agent_turn`, …): each environment's
  config declares an `<env>_environment_server` instance beside its resources server and agent. Which server dirs a
  config starts is therefore read from the config itself (`config_server_dirs`), never assumed per version: every
  one of them gets the pin's environment as its venv, so Gym never runs uv (with the network off it cannot).
- `RunHelper.start` checks its servers' readiness every 3 s on every release (`sleep` imported into its module): while
  it runs in a Gym actor, that module's `sleep` waits at most READINESS_POLL_S (`readiness_polled_often`).
- `RolloutCollectionHelper.run_examples` (every release) asks the head server for the instance's whole global config
  and parses it again on every call (`setup_server_client`): NeMo RL calls it once per training batch, gymgate once
  per path attempt. The helper of a Gym actor reuses the client its first call made (`server_client_reused`).
- From 0.5.0 `RunHelper.start` waits for `GET <policy_base_url>/models` for up to
  `model_endpoint_readiness_timeout_seconds` (600 s by default). gymgate's endpoint is up before any Gym starts,
  so the wait is bounded to MODEL_PROBE_S where Gym knows the key (read from its global config module).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import yaml

SHIM_DIR = Path(__file__).resolve().parent / "shims"


def _add_shim_path() -> None:
    if str(SHIM_DIR) not in sys.path:
        sys.path.insert(0, str(SHIM_DIR))
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(SHIM_DIR) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(SHIM_DIR), *parts])


def _import_cli_module():
    try:
        return importlib.import_module("nemo_gym.cli.env")
    except ModuleNotFoundError as exc:
        if exc.name == "scripts":
            raise
    return importlib.import_module("nemo_gym.cli")


def run_helper_api() -> tuple[type, type]:
    """(RunHelper, GlobalConfigDictParserConfig) for the installed Gym, applying the 0.2.0 shim if needed."""
    try:
        module = _import_cli_module()
    except ModuleNotFoundError as exc:
        if exc.name != "scripts":
            raise
        _add_shim_path()
        for name in [m for m in sys.modules if m.startswith("nemo_gym.cli") or m == "nemo_gym.hf_utils"]:
            del sys.modules[name]
        module = _import_cli_module()
    from nemo_gym.global_config import GlobalConfigDictParserConfig  # noqa: PLC0415 - pin environment only (Gym), in the process that runs it

    return module.RunHelper, GlobalConfigDictParserConfig


READINESS_POLL_S = 0.2


@contextmanager
def readiness_polled_often(run_helper_cls: type) -> Iterator[bool]:
    """While `RunHelper.start` runs, its module's `sleep` waits at most READINESS_POLL_S: Gym sleeps 3 s between
    checks that its head server and its servers answer, so an instance was seen ready up to 3 s after it was. What
    Gym starts, and how, is unchanged: only how often it asks. Yields whether the module had `sleep` to shorten (a
    Gym that waits some other way is left as it is)."""
    module = sys.modules.get(run_helper_cls.__module__)
    if module is None or getattr(module, "sleep", None) is not time.sleep:
        yield False
        return
    module.sleep = lambda seconds: time.sleep(min(seconds, READINESS_POLL_S))
    try:
        yield True
    finally:
        module.sleep = time.sleep


def server_client_reused(helper: object) -> object:
    """`helper` (a RolloutCollectionHelper) with its `setup_server_client` made once per head server: the first call
    is Gym's own (the GET of the head server's global config and its parse), later calls get that client again.
    Equivalent because the config a head server serves is fixed before its servers start, and run_examples only
    reads it; the parse took about as long as a one-row rollout (docs/benchmarks.md, issue 29). A Gym whose helper
    has no such method is left as it is."""
    own = getattr(helper, "setup_server_client", None)
    if own is None:
        return helper
    clients: dict[tuple, object] = {}

    def setup_server_client(head_server_config=None):
        key = (getattr(head_server_config, "host", None), getattr(head_server_config, "port", None))
        if key not in clients:
            clients[key] = own(head_server_config)
        return clients[key]

    object.__setattr__(helper, "setup_server_client", setup_server_client)  # the helper is a pydantic model
    return helper


MODEL_PROBE_KEY = "model_endpoint_readiness_timeout_seconds"
MODEL_PROBE_S = 60


@functools.cache
def start_overrides() -> dict[str, object]:
    """Top-level config keys this Gym version needs from gymgate at start-up (none before 0.5.0). Read from Gym's
    source, not imported: importing nemo_gym.global_config (hydra, omegaconf) cost each worker 0.8 CPU-s."""
    source = (gym_package() / "global_config.py").read_text(errors="replace")
    return {MODEL_PROBE_KEY: MODEL_PROBE_S} if MODEL_PROBE_KEY in source else {}


def gym_package() -> Path:
    """The installed nemo_gym package's folder, found without importing it."""
    spec = importlib.util.find_spec("nemo_gym")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("nemo_gym is not installed in this environment")
    return Path(spec.origin).resolve().parent


def gym_root() -> Path:
    """The directory Gym resolves built-in server dirs and config paths against (its PARENT_DIR)."""
    return gym_package().parent


def gym_version() -> str:
    return version("nemo-gym")


TOP_LOGPROBS_FROM = (0, 4, 0)  # Gym's model server asks for top_logprobs: 0 from 0.4.0 (before: not sent)


def release(version: str) -> tuple[int, int, int]:
    """The release numbers of a version string ("0.4.0rc1.dev3" -> (0, 4, 0)): a pre-release or development build
    is held to the rules of the release it names."""
    numbers = [int(n) for n in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple((numbers + [0, 0, 0])[:3])  # type: ignore[return-value]


def sends_top_logprobs(version: str | None = None) -> bool:
    """Whether this Gym's requests must carry `top_logprobs: 0` (what NeMo RL's vLLM server is asked)."""
    return release(version or gym_version()) >= TOP_LOGPROBS_FROM


def has_config(config: str) -> bool:
    return (gym_root() / config).is_file()


def _config_files(config: str, root: Path, seen: set[Path]) -> list[dict]:
    """The YAML documents a Gym config path stands for, its nested `config_paths` included (as Gym merges them)."""

    path = (root / config).resolve()
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        return []
    found = [data]
    for nested in data.get("config_paths") or []:
        found += _config_files(str(nested), root, seen)
    return found


def config_servers(*configs: str, root: Path | None = None) -> list[tuple[str, str, str]]:
    """(instance name, type, impl) of every server instance the configs declare (`NAME: {TYPE: {IMPL: {entrypoint:
    …}}}`), in the order declared."""
    base = root or gym_root()
    found: list[tuple[str, str, str]] = []
    seen: set[Path] = set()
    for config in configs:
        for document in _config_files(config, base, seen):
            for name, instance in document.items():
                if not isinstance(instance, dict) or len(instance) != 1:
                    continue
                ((server_type, impls),) = instance.items()
                if not isinstance(impls, dict) or len(impls) != 1:
                    continue
                ((impl, body),) = impls.items()
                if isinstance(body, dict) and "entrypoint" in body and (name, server_type, impl) not in found:
                    found.append((str(name), str(server_type), str(impl)))
    return found


def config_server_dirs(*configs: str, root: Path | None = None) -> list[str]:
    """`<type>/<impl>` of every server the configs declare: the dirs whose venv Gym looks for at start-up."""
    return list(dict.fromkeys(f"{kind}/{impl}" for _, kind, impl in config_servers(*configs, root=root)))
