"""Command-line contract: usage errors exit 2 with a message, before anything is built."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from gymgate.cli import main
from gymgate.errors import EXIT_INTERNAL, EXIT_UNJUDGED
from gymgate.services.ports import free_port_in, is_free, lease_band


def test_missing_ref_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["accept"])
    assert info.value.code == 2
    assert "--gym-ref" in capsys.readouterr().err


def test_unknown_flag_is_a_usage_error():
    with pytest.raises(SystemExit) as info:
        main(["accept", "--gym-ref", "0.4.0", "--parallel-universe"])
    assert info.value.code == 2


@pytest.mark.parametrize("value", ["-1", "many", "11"])
def test_bad_rerun_counts_are_usage_errors(capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["accept", "--gym-ref", "0.4.0", "--reruns", value])
    assert info.value.code == 2
    assert "number of reruns" in capsys.readouterr().err


def test_unknown_environment_name_exits_2_before_building(capsys, cache):
    assert main(["up", "--gym-ref", "0.4.0", "--env", "chess"]) == 2
    err = capsys.readouterr().err
    assert "unknown environment 'chess'" in err and "mcqa" in err and "no ref declares it" in err
    assert not (cache / "envs").exists()


def test_an_unknown_launcher_exits_2_before_building(capsys, cache, monkeypatch):
    monkeypatch.setenv("GYMGATE_LAUNCHER", "spawn")
    assert main(["accept", "--gym-ref", "0.4.0"]) == 2
    assert "GYMGATE_LAUNCHER='spawn': expected one of fork, exec" in capsys.readouterr().err


def test_unknown_ref_exits_2_through_the_console_script():
    result = subprocess.run(
        [sys.executable, "-m", "gymgate", "resolve", "--gym-ref", "nope"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "unknown Gym ref 'nope'" in result.stderr and "known pins: 0.2.0" in result.stderr


def test_lock_of_unknown_pin_is_a_usage_error(capsys):
    assert main(["lock", "9.9.9"]) == 2
    assert "no pin named '9.9.9'" in capsys.readouterr().err


def test_leased_bands_are_exclusive_stay_clear_of_ray_and_ephemeral_ranges_and_come_back(tmp_path):
    import random

    rng = random.Random(7)
    leases = [lease_band(rng, tmp_path) for _ in range(60)]  # every band of 20000-32000, each once
    assert sorted(lease.low for lease in leases) == list(range(20000, 32000, 200))
    assert all(lease.high - lease.low == 200 for lease in leases)
    with pytest.raises(OSError, match="every port band"):
        lease_band(rng, tmp_path)
    leases[13].release()
    again = lease_band(rng, tmp_path)
    assert again.low == leases[13].low
    # A lease is a kernel lock: another process sees the band taken until the holder lets go.
    probe = "import fcntl,os,sys; fd=os.open(sys.argv[1],os.O_RDWR); fcntl.flock(fd,fcntl.LOCK_EX|fcntl.LOCK_NB)"
    held = subprocess.run([sys.executable, "-c", probe, str(tmp_path / f"{again.low}.lock")], capture_output=True)
    assert held.returncode != 0 and b"BlockingIOError" in held.stderr
    for lease in [*leases, again]:
        lease.release()
    free = subprocess.run([sys.executable, "-c", probe, str(tmp_path / f"{again.low}.lock")], capture_output=True)
    assert free.returncode == 0, free.stderr


def test_free_port_in_skips_a_port_in_use():
    import socket

    with socket.socket() as busy, socket.socket() as spare:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        spare.bind(("127.0.0.1", 0))
        taken, free = busy.getsockname()[1], spare.getsockname()[1]
        spare.close()  # released: free again
        assert not is_free(taken) and is_free(free)
        with pytest.raises(OSError, match="no free port"):
            free_port_in(taken, taken + 1)
        assert free_port_in(free, free + 1) == free


def test_a_crash_of_gymgate_itself_is_never_a_verdict(tmp_path, monkeypatch, capsys):
    """Any exception that is not a judged outcome exits 4 with one line naming it and the trace in the run folder."""
    import gymgate.cli as cli
    from gymgate.runfolder import RunFolder
    from gymgate.runfolder.folder import CRASH

    run = RunFolder(tmp_path / "run").opened().root
    run.mkdir()

    def broken(**_):
        raise RuntimeError("gymgate bug")

    from gymgate.harness import review

    monkeypatch.setattr(review, "compare_command", broken)
    assert cli.main(["compare", "a", "b"]) == EXIT_INTERNAL
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gymgate: internal error: RuntimeError: gymgate bug (trace: {run / CRASH})"]
    assert "Traceback" in (run / CRASH).read_text() and "gymgate bug" in (run / CRASH).read_text()


def test_a_lock_held_too_long_names_its_holder(tmp_path, monkeypatch):
    """A run waiting past its deadline on a lock another run holds is told which run that is (exit 2 via
    InfraError), not given a bare filelock timeout."""
    import json
    import os
    import subprocess
    import sys

    from gymgate.locks import held

    lock = tmp_path / "env.lock"
    monkeypatch.setenv("GYMGATE_RUN_ID", "holder1")
    with held(lock, 5, "building environment x"):
        assert json.loads((tmp_path / "env.lock.holder").read_text())["run"] == "holder1"
        # filelock is reentrant within one process: the waiting run is another process.
        code = (
            "import sys; from pathlib import Path; from gymgate.locks import held; from gymgate.errors import InfraError\n"
            "try:\n"
            f"    with held(Path({str(lock)!r}), 0.5, 'building environment x'): pass\n"
            "except InfraError as exc:\n"
            "    print(exc); sys.exit(exc.exit_code)\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == EXIT_UNJUDGED, done.stderr
    assert "building environment x: waited 0.5 s for" in done.stdout and "held by run holder1, pid" in done.stdout


def test_many_ref_commands_refuse_bad_input_before_running_anything(tmp_path, capsys, cache):
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert main(["bisect", "--good", "0.3.0", "--bad", "0.4.0", *runs]) == 2
    assert "bisect walks git history: '0.3.0' is a pin ref" in capsys.readouterr().err
    assert main(["matrix", "0.4.0", "0.4.0", *runs]) == 2
    assert "names the same Gym twice" in capsys.readouterr().err
    assert main(["matrix", "0.3.0", "nope", *runs]) == 2
    assert "unknown Gym ref 'nope'" in capsys.readouterr().err
    assert main(["matrix", "--only", "0.2.0", "0.3.0", "0.4.0", *runs]) == 0  # not among the refs: nothing runs
    assert "0.2.0 is not among the refs asked for" in capsys.readouterr().out
    assert not (tmp_path / "runs").exists() and not (cache / "envs").exists()


@pytest.mark.parametrize("flag", [["--load"], ["--gym-tests", "envs"]])
def test_load_and_gym_tests_need_two_refs(flag, tmp_path, capsys, cache):
    """`accept --load` and `--gym-tests` compare two refs: alone, refused before anything is built."""
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert main(["accept", "--gym-ref", "0.7.0", "--no-baseline", *flag, *runs]) == 2
    assert f"{flag[0]} compares two refs" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and not (cache / "envs").exists()


def _help(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gymgate", *argv, "--help"], capture_output=True, text=True, timeout=60,
        env={**__import__("os").environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_version_and_help_follow_the_conventions():
    """--version; the top help lists the public commands (never the cluster's `unit`), examples and every exit
    code; each judging command's help has a description, examples and the exit codes; flags only gymgate passes
    itself are parsed but not shown."""
    from gymgate import __version__
    from gymgate.cli import COMMANDS
    from gymgate.errors import EXIT_CODES
    from gymgate.options import JUDGED_COMMANDS

    version = subprocess.run([sys.executable, "-m", "gymgate", "--version"], capture_output=True, text=True)
    assert (version.returncode, version.stdout.strip()) == (0, f"gymgate {__version__}")
    top = _help()
    assert "examples:" in top and all(f"  {e.code:<4} {e.name}" in top for e in EXIT_CODES)
    listed = set(re.findall(r"^    (\S+)\s", top.split("commands:")[1].split("examples:")[0], re.M))
    assert listed == {c.name.split()[0] for c in COMMANDS if not c.internal} and "unit" not in listed
    for name in JUDGED_COMMANDS:
        shown = _help(name)
        assert "examples:" in shown and "exit codes:" in shown and "  130  interrupted" in shown, name
        assert "--json" in shown, name
    matrix = _help("matrix")
    assert "--only" not in matrix and "--reuse-since" not in matrix
    assert main(["matrix", "--only", "9.9", "0.4.0", "--reuse-since", "1"]) == 0  # still parsed: nox passes them


def test_ctrl_c_exits_130(monkeypatch, capsys):
    import gymgate.cli as cli
    from gymgate.errors import EXIT_INTERRUPTED
    from gymgate.harness import review

    def interrupted(**_):
        raise KeyboardInterrupt

    monkeypatch.setattr(review, "compare_command", interrupted)
    assert cli.main(["compare", "a", "b"]) == EXIT_INTERRUPTED == 130
    assert "interrupted" in capsys.readouterr().err


def test_a_judging_command_prints_its_verdict_alone_on_stdout(tmp_path):
    """Results on stdout, progress on stderr: `gymgate compare … > verdict.txt` keeps the verdict view."""
    from tests.helpers import record, stored_run

    base = stored_run(tmp_path, "base", "0.3.0", [record("mcqa:accepted", "PASS")])
    cand = stored_run(tmp_path, "cand", "0.4.0", [record("mcqa:accepted", "FAIL")])
    done = subprocess.run(
        [sys.executable, "-m", "gymgate", "compare", str(base), str(cand)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "Verdict:" in done.stdout and "Verdict:" not in done.stderr


@pytest.mark.parametrize(("argv", "code"), [(["accept", "--help"], 0), (["--version"], 0), (["accept"], 2)])
def test_nox_learns_the_code_of_help_and_of_a_usage_error(tmp_path, monkeypatch, argv, code):
    """`nox -s accept -- --help` must end 0, not as a run that said nothing (argparse exits before the command)."""
    exit_file = tmp_path / "exit-code"
    monkeypatch.setenv("GYMGATE_EXIT_FILE", str(exit_file))
    with pytest.raises(SystemExit):
        main(argv)
    assert exit_file.read_text() == str(code)
