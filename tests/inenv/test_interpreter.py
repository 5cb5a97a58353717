"""The interpreter a pin's environment runs on, when gymgate built it with its current flags (a fresh cache, as in
CI): built the way envs/cpython.py says (optimised, without debug information or a seeded pip)."""

from __future__ import annotations

import importlib.util
import shlex
import sys
import sysconfig
from pathlib import Path

import pytest

from gymgate.envs import cpython


def test_a_gymgate_build_has_the_flags_it_was_configured_with():
    mark = cpython.build_info(Path(sys.base_prefix) / "bin" / "python3")
    if not mark or mark.get("configure", [])[1:] != list(cpython.CONFIGURE_FLAGS):
        pytest.skip(f"{sys.base_prefix} is not a gymgate build with today's flags (built before they changed?)")
    (opt,) = [flag.removeprefix("OPT=") for flag in cpython.CONFIGURE_FLAGS if flag.startswith("OPT=")]
    assert sysconfig.get_config_var("OPT") == f"-DNDEBUG {opt}"  # configure adds NDEBUG to a release build's own
    cflags = shlex.split(sysconfig.get_config_var("CFLAGS"))
    assert "-O3" in cflags and "-g" not in cflags
    assert importlib.util.find_spec("ensurepip") is not None  # the standard library is whole; only pip is not seeded
    base_site = Path(sysconfig.get_path("purelib", vars={"base": sys.base_prefix}))
    assert not list(base_site.glob("pip*")), list(base_site.glob("pip*"))
