"""The forking launcher's preload list (services/launcher/preload.toml), checked in a pin's environment: importing it
imports none of the modules that read what differs between the zygote and the processes it forks, and the stage the
zygotes share none that reads what differs between the zygotes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gymgate.services import launcher

PROBE = """import json, sys
for name in json.loads(sys.argv[1]):
    try:
        __import__(name)
    except Exception:
        pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def _imported(modules: list[str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.parametrize("name", list(launcher.zygotes()))
def test_preloading_imports_nothing_it_must_not(name):
    spec = launcher.zygotes()[name]
    imported = _imported([*launcher.shared().modules, *spec.modules])
    assert imported & spec.never == set()
    assert "numpy" in imported  # the probe really imported the list


def test_the_shared_stage_brings_nothing_a_zygote_imports_with_its_own_values():
    stage = launcher.shared()
    imported = _imported(list(stage.modules))
    assert imported & stage.forbidden == set()
    assert {"openai", "fastapi", "pydantic"} <= imported  # the probe really imported the list
