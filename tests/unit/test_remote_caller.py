"""The harness's side of a dispatch (gymgate/remote/caller.py) against a stand-in driver (no Ray): the request it
writes, the result it reads, a driver that says nothing is an infrastructure error, and a stop that escalates from
SIGTERM to SIGINT to SIGKILL within its bounds."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from gymgate.errors import InfraError
from gymgate.remote import caller
from gymgate.remote.plan import Unit

DRIVER = """#!{python}
import json, signal, sys, time
request, result = sys.argv[3], sys.argv[4]
asked = json.load(open(request))
mode = asked["environ"].get("MODE")
if mode == "silent":
    sys.exit(2)
names = ["unit-%s-a1" % u["label"] for u in asked["units"]]
assert set(asked["into"]) == {{u["label"] for u in asked["units"]}}
json.dump({{"outcomes": {{n: "done" for n in names}}, "reasons": {{}}, "nodes": {{n: "node-" + n for n in names}},
           "codes": {{n: 0 for n in names}}, "namespace": "ns"}}, open(result, "w"))
"""


@pytest.fixture
def driver(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(DRIVER.format(python=sys.executable))
    fake.chmod(0o755)
    return str(fake)


def test_the_driver_gets_the_units_and_the_checkout_and_its_result_is_read(driver, tmp_path):
    units = [Unit("0.4.0", {}), Unit("0.7.0", {})]
    done = caller.run_dispatch("ray://head:10001", driver, units, {u.label: tmp_path / u.label for u in units})
    assert done.exit_code == 0 and done.outcomes == {"unit-0.4.0-a1": "done", "unit-0.7.0-a1": "done"}


def test_a_driver_that_says_nothing_is_an_infrastructure_error(driver, tmp_path):
    with pytest.raises(InfraError, match="without saying what its units did"):
        caller.run_dispatch("auto", driver, [Unit("0.4.0", {})], {"0.4.0": tmp_path}, environ={"MODE": "silent"})


def test_a_stop_escalates_within_its_bounds(monkeypatch):
    monkeypatch.setattr(caller, "STOP_BOUND_S", 1.0)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    process = subprocess.Popen([sys.executable, "-c", stubborn])
    time.sleep(0.5)
    started = time.monotonic()
    caller._stop(process)  # SIGTERM ignored; SIGINT ends it
    assert process.returncode is not None and time.monotonic() - started < 10
