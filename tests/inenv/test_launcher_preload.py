"""The forking launcher's preload list (services/launcher/preload.toml), checked in a pin's environment: importing it
imports none of the modules that read what differs between the zygote and the processes it forks."""

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


@pytest.mark.parametrize("name", list(launcher.zygotes()))
def test_preloading_imports_nothing_it_must_not(name):
    spec = launcher.zygotes()[name]
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(spec.modules)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    imported = set(json.loads(result.stdout.splitlines()[-1]))
    assert imported & spec.never == set()
    assert "numpy" in imported  # the probe really imported the list
