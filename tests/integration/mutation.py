"""The Gym mutation suite's machinery (tests/integration/test_*mutants.py use it): each mutant in mutants.toml (the
index's sdist of its `version`, 0.4.0 unless it says otherwise, changed in one place) goes through `gymgate accept
--baseline <that version's pin>` as a user would run it.
For each: the exit code, exactly the affected paths with their category, outcome, blame and cause, every other path
same-pass with nothing changed, and no process of any of its runs left alive."""

from __future__ import annotations

import atexit
import fnmatch
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from gymgate.processes import marked_pids
from gymgate.refs.index import cached_sdist as sdist
from gymgate.refs.index import unpack_sdist as unpack
from gymgate.runfolder import RunFolder
from gymgate.runfolder.folder import MARK

SUITE = tomllib.loads((Path(__file__).parent / "mutants.toml").read_text())
CASES = Path(__file__).resolve().parents[2] / "cases"
MUTANTS = {m["name"]: m for m in SUITE["mutant"]}


def group(name: str) -> list[str]:
    """The mutants of one test file (`group` in mutants.toml; each file shares one baseline run among them)."""
    return [m for m, spec in MUTANTS.items() if spec.get("group", "") == name]


def version(mutant: dict) -> str:
    return mutant.get("version", SUITE["version"])


@functools.cache
def pristine(gym_version: str) -> Path:
    """The index's sdist of `gym_version`, unpacked once per test process (0.7.0's 6,000 files: 1.9 s to unpack,
    0.4 s to copy) and removed when the process ends. Never built or run in place: each mutant gets a copy."""
    root = Path(tempfile.mkdtemp(prefix="gg-sdist-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    unpack(sdist(gym_version), root / "gym")
    return root / "gym"


def build_mutant(mutant: dict, root: Path, new: str | None = None) -> Path:
    """A copy of the mutant's unpacked sdist in `root`, with its one change (`new` replaces the mutant's own)."""
    shutil.copytree(pristine(version(mutant)), root, symlinks=True)
    if "file" not in mutant:
        return root
    target = root / mutant["file"]
    if mutant.get("delete"):
        target.unlink()
        return root
    lines = target.read_text().split("\n")
    hits = [i for i, line in enumerate(lines) if line == mutant["line"]]
    assert len(hits) == 1, f"{mutant['name']}: {mutant['file']} changed upstream ({len(hits)} matches); update it"
    lines[hits[0]] = new or mutant["new"]
    target.write_text("\n".join(lines))
    return root


def accept(gym: Path, mutant: dict, runs: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gymgate", "accept", "--gym-ref", str(gym), "--baseline", version(mutant)]
    for env in mutant.get("envs", SUITE["envs"]):
        command += ["--env", env]
    command += ["-n", "1", "--runs-dir", str(runs), "--reruns", str(mutant.get("reruns", 0))]
    command += [*([] if mutant.get("replays") else SUITE.get("args", [])), *mutant.get("args", [])]
    return subprocess.run([*command, *extra], capture_output=True, text=True, timeout=1500)


def gymgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gymgate", *args], capture_output=True, text=True, timeout=300)


def run_dirs(runs: Path) -> list[Path]:
    return [mark.parent for mark in runs.rglob(MARK)]


def judge(name: str, runs: Path, tmp_path: Path) -> None:
    """One mutant through `gymgate accept --baseline <its version>`, checked as the module docstring says, in each
    of its `tries` (default 1) bumps: a red candidate is never served from the cache, so every try runs it."""
    mutant = MUTANTS[name]
    gym = build_mutant(mutant, tmp_path / "gym")
    for _ in range(mutant.get("tries", 1)):
        judge_once(mutant, gym, runs, tmp_path)


def judge_once(mutant: dict, gym: Path, runs: Path, tmp_path: Path, *extra: str) -> None:
    """One bump of the mutant (`extra`: more options for its `accept`, e.g. a cluster to run on)."""
    before = set(run_dirs(runs))
    acks = tmp_path / "acks"  # empty: no mutant's change is acknowledged unless the test does it below
    done = accept(gym, mutant, runs, "--acks", str(acks), *extra)
    out = done.stdout + done.stderr
    assert done.returncode == mutant["exit"], out

    # Nothing any of this mutant's runs (baseline, candidate, reruns) started is still alive.
    started = [d for d in run_dirs(runs) if d not in before]
    assert started, out
    for run in started:
        run_id = RunFolder(run).mark().run_id
        assert run_id and marked_pids(run_id) == [], f"{run} left processes running"

    (candidate,) = [d for d in started if (d / "results.json").is_file()]
    results = json.loads((candidate / "results.json").read_text())
    by_path = {p["path"]: p for p in results["paths"]}
    envs = mutant.get("envs", SUITE["envs"])
    cased = [e for e in envs if (CASES / f"{e}.toml").is_file()]  # the others run their recordings alone
    assert {f"{e}:{m}" for e in cased for m in ("accepted", "rejected")} <= set(by_path), sorted(by_path)
    assert {p.split(":")[0] for p in by_path} == set(envs), sorted(by_path)
    expected = mutant.get("paths", {})
    for key in expected:  # a key may be a glob (`mcqa:rec.*`): it must name at least one path of the run
        assert fnmatch.filter(by_path, key), (key, sorted(by_path))
    for path, item in by_path.items():
        matched = [k for k in expected if fnmatch.fnmatchcase(path, k)]
        if not matched:
            assert item["category"] == "same-pass", (path, item)
            assert item["changed"] == [], (path, item["changed"])
            continue
        want = expected[matched[0]]
        assert item["category"] == want["category"], (path, item)
        assert item["candidate"]["outcome"] == want["outcome"], (path, item["candidate"]["reason"])
        assert item["blame"] == want.get("blame", ""), (path, item["candidate"]["reason"])
        unstable = [d["line"] for d in item.get("nondeterministic", {}).values()]
        evidence = "\n".join([*item["root_causes"], item["candidate"]["reason"], *unstable])
        assert want["cause"] in evidence, (path, evidence)
        assert "\x1b[" not in item["candidate"]["reason"]  # no terminal colour codes in files
    if "shared" in mutant:  # the environments shared one Gym instance: the named one's first attempt erred there
        records = {r.path: r for r in RunFolder(candidate).records().values()}
        crashed = [r for r in records.values() if r.env == mutant["shared"] and r.alone_after]
        assert crashed and all("+" in r.alone_after["instance"] for r in crashed), records
        assert not [r.path for r in records.values() if r.env != mutant["shared"] and r.alone_after]
    lifecycle = results["lifecycle"]["candidate"]
    assert bool(lifecycle) == mutant.get("lifecycle", False), lifecycle
    report = (candidate / "report.md").read_text()
    if mutant["exit"] == 0:
        assert f"**Verdict: no regression ({len(by_path)} paths pass on both).**" in report, report
    if lifecycle:
        assert "### Lifecycle check" in report and "shutdown" in report
    if "ack" in mutant:
        acknowledge(mutant, candidate, acks, runs, tmp_path)


def acknowledge(mutant: dict, candidate: Path, acks: Path, runs: Path, tmp_path: Path) -> None:
    """The review workflow on a real bump: draft, reason, the same comparison passes showing the acknowledgement;
    another value of the same field is not covered."""
    done = gymgate("ack", str(candidate), "--acks", str(acks))
    assert done.returncode == 0, done.stdout + done.stderr
    (draft,) = acks.glob("*.toml")
    assert draft.read_text().count('reason = ""') == 1  # one change, on every affected path
    draft.write_text(draft.read_text().replace('reason = ""', f'reason = "{mutant["ack"]["reason"]}"'))
    baseline = json.loads((candidate / "results.json").read_text())["provenance"]["baseline"]["run_dir"]
    out = tmp_path / "acknowledged"
    out.mkdir()
    done = gymgate("compare", baseline, str(candidate), "--acks", str(acks), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    assert {p["category"] for p in results["paths"]} == {"same-pass"}
    assert mutant["ack"]["reason"] in (out / "report.md").read_text()

    # The same entry offered for another candidate whose change has another value: it must not cover it.
    other = build_mutant(mutant, tmp_path / "other", new=mutant["ack"]["other"])
    resolved = gymgate("resolve", "--gym-ref", str(other))
    digest = json.loads(resolved.stdout)["digest"]
    candidate_digest = json.loads((candidate / "source.json").read_text())["digest"]
    (acks / "reused.toml").write_text(draft.read_text().replace(candidate_digest, digest))
    before = set(run_dirs(runs))
    done = accept(other, mutant, runs, "--acks", str(acks))
    assert done.returncode == 1, done.stdout + done.stderr
    (rerun,) = [d for d in run_dirs(runs) if d not in before and (d / "results.json").is_file()]
    results = json.loads((rerun / "results.json").read_text())
    assert {p["path"] for p in results["paths"] if p["category"] == "changed"} == set(mutant["paths"])
    (stale,) = results["acknowledgements"]["stale"]  # named by its path: a folder of the repository's, not gymgate's
    assert stale == f"{acks / 'reused.toml'} change 1 (requests.policy.*.body.seed)", stale
