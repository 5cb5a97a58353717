"""The harness's side of a dispatch (gymgate/remote/caller.py) against a stand-in driver (no Ray): the request it
writes, the result it reads, a driver that says nothing is an infrastructure error, a cluster that refuses the
user's token is a usage error that names where the token came from and never the token, and a stop that escalates
from SIGTERM to SIGINT to SIGKILL within its bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from gymgate.errors import InfraError, UsageError
from gymgate.remote import auth, caller
from gymgate.remote.units import Unit

DRIVER = """#!{python}
import json, signal, sys, time
request, result = sys.argv[3], sys.argv[4]
asked = json.load(open(request))
mode = asked["environ"].get("MODE")
if mode == "silent":
    sys.exit(2)
if mode in ("refused", "unreachable"):
    from gymgate.remote.driver import connect_result
    json.dump(connect_result(mode, "Ray's own words"), open(result, "w"))
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


TOKEN = "s3cret-token-never-shown"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME of the test's own, no Ray variable of the machine's."""
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_where_the_token_is_taken_from_is_rays_order_and_names_no_token(home, monkeypatch, tmp_path):
    assert auth.token_source(os.environ) == ""
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(TOKEN)
    assert auth.token_source(os.environ) == str(home / ".ray" / "auth_token")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "named"))
    assert auth.token_source(os.environ) == f"the file $RAY_AUTH_TOKEN_PATH names ({tmp_path / 'named'})"
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    assert auth.token_source(os.environ) == "$RAY_AUTH_TOKEN"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert "RAY_AUTH_MODE=disabled is set, so no token was sent" in auth.refusal("h:1", os.environ)
    assert TOKEN not in auth.refusal("h:1", os.environ)


def test_a_cluster_that_refuses_the_token_is_a_usage_error_that_never_shows_it(driver, tmp_path, home, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
    with pytest.raises(UsageError) as refused:
        caller.run_dispatch("h:1", driver, [Unit("0.4.0", {})], {"0.4.0": tmp_path}, environ={"MODE": "refused"})
    said = str(refused.value)
    assert "the Ray cluster at h:1 refused" in said and "from $RAY_AUTH_TOKEN" in said and TOKEN not in said
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    with pytest.raises(UsageError, match="no token was found"):
        caller.run_dispatch("h:1", driver, [Unit("0.4.0", {})], {"0.4.0": tmp_path}, environ={"MODE": "refused"})


def test_an_unreachable_cluster_is_an_infrastructure_error(driver, tmp_path, home):
    with pytest.raises(InfraError, match="the Ray cluster at h:1 did not answer: Ray's own words"):
        caller.run_dispatch("h:1", driver, [Unit("0.4.0", {})], {"0.4.0": tmp_path}, environ={"MODE": "unreachable"})


@pytest.mark.parametrize("content", [None, ""], ids=["missing", "empty"])
def test_a_token_file_ray_would_abort_on_is_said_before_anything_starts(tmp_path, home, monkeypatch, content):
    named = tmp_path / "token"
    if content is not None:
        named.write_text(content)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(named))
    with pytest.raises(UsageError, match=f"RAY_AUTH_TOKEN_PATH names {named}, which"):
        caller.run_dispatch("h:1", "/nonexistent/python", [Unit("0.4.0", {})], {"0.4.0": tmp_path})
