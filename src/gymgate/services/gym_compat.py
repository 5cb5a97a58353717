"""Every difference between Gym versions that gymgate's service code must know, in one place.

- 0.2.0 ships `nemo_gym.cli` importing an unpackaged `scripts` module: a shim directory is put on
  sys.path and PYTHONPATH (so Gym's server children inherit it) when, and only when, that import fails.
- `RunHelper` lives in `nemo_gym.cli` up to 0.3.x and in `nemo_gym.cli.env` from 0.4.0 (the old
  name stays as a deprecated shim there): the new home is tried first.
- structured_outputs_v4 exists from 0.3.0: decided by the config file being present, not by version.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

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
    from nemo_gym.global_config import GlobalConfigDictParserConfig

    return module.RunHelper, GlobalConfigDictParserConfig


def gym_root() -> Path:
    """The directory Gym resolves built-in server dirs and config paths against (its PARENT_DIR)."""
    import nemo_gym

    return Path(nemo_gym.__file__).resolve().parent.parent


def gym_version() -> str:
    from importlib.metadata import version

    return version("nemo-gym")


def has_config(config: str) -> bool:
    return (gym_root() / config).is_file()
