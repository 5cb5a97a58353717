"""The run folder's layout, marks and records: every file of a run is named, read and written here.

A run folder is the one contract between the harness (resolve, build, judge, report) and the session that runs
inside a pin's environment. Layout:

    run.json                 the run mark: what the run was asked to do and how it ended (RunMark)
    source.json              the resolved Gym ref (provenance)
    rl.json                  which RL the paths were judged as: the RL profile and recipe (gymgate.rl.profile)
    uv.lock, environment.json  the lock and the environment the run used (so stored runs compare without a checkout)
    paths/<env>-<mode>.json  one PathRecord per path that ran
    services/<env>.json      each environment's start-up status, as it happens (the progress view reads them)
    workers/<worker>.json    what each session worker started, stopped and could not stop in time
    services.json            `gymgate up`'s record of the environments it started
    logs/<env>.log, gym/<env>/, data/<env>/, venvs/, setup/   the Gyms' logs, working copies, rows, shared setup
    pytest.log, crash.txt    the session's output; gymgate's own traceback when a command crashed
    reruns/reruns.json, reruns/<role>-<n>/   attempts in fresh Gyms (each one a run folder itself)
    originals/paths/         an original path run again as a variant's oracle when this run holds no record of it
    gym-tests/               Gym's own tests across the bump (`accept --gym-tests`): gym-tests.json (every test's
                             category), gym-tests.md/.html, logs/ (each suite's pytest output and report logs)

Readers get one record per expected path: an expected path that left no record is an ERROR ("no record: …"), and
a record that cannot be read is an ERROR naming the file: never silently absent, never a pass. A folder written by
another gymgate (another SCHEMA) or with a damaged run.json is refused (UsageError, exit 2).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import shutil
import tempfile
import traceback
from collections.abc import Container, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from gymgate.atomic import write_json_atomic, write_text_atomic
from gymgate.errors import UsageError
from gymgate.locations import repo_root
from gymgate.options import RUNS_VAR
from gymgate.outcomes import ERROR, HARNESS
from gymgate.pathid import PathId
from gymgate.runfolder.record import NO_RECORD_REASON, PathRecord
from gymgate.runfolder.status import EnvStatus, WorkerRecord

# The run folder's shape; bumped when its files change (2: every path record carries `observed`; 3: the harness
# hands the session its plan, plan.jsonl, in place of the recordings it replays)
SCHEMA = 3
# pytest's exit statuses of a session that ran its tests to the end (0 all passed, 1 some failed)
FINISHED_STATUSES = (0, 1)

MARK = "run.json"
SOURCE = "source.json"
CONSUMER = "rl.json"
LOCK = "uv.lock"
ENVIRONMENT = "environment.json"
PATHS = "paths"
SERVICES = "services"
WORKERS = "workers"
UP_RECORD = "services.json"
LOGS = "logs"
GYM_TESTS = "gym-tests"
GYM_TESTS_RESULTS, GYM_TESTS_MARKDOWN, GYM_TESTS_PAGE = "gym-tests.json", "gym-tests.md", "gym-tests.html"
SETUP = "setup"
PYTEST_LOG = "pytest.log"
CRASH = "crash.txt"
RERUNS = "reruns"
RERUNS_MANIFEST = "reruns.json"
ORIGINALS = "originals"
PLAN = "plan.jsonl"

_opened: list[Path] = []  # run folders this process opened, newest last (where a crash's trace goes)


@dataclass
class RunMark:
    """run.json. A run is `complete` only when its test session ran every path to its end (or the ref is BROKEN);
    an incomplete run says why, and is never compared or reused."""

    expected: list[str] = field(default_factory=list)  # the path ids the run was asked for
    complete: bool = False
    run_id: str = ""
    inputs: str = ""  # the digest of every input that can change the results (compare/reuse.py)
    started: float | None = None
    finished: float | None = None
    pytest_exit: int | None = None  # the test session's exit status
    incomplete: str = ""  # why the run did not finish (interrupted, deadline, session status)
    broken: str = ""  # why the ref could not be locked or built (every path BROKEN)
    lifecycle: list[str] = field(default_factory=list)  # what outlived the run and was killed
    shared_inputs: str = ""  # the inputs digest without the path selection: equal for every shard of one run
    shard: str = ""  # "K/N" for a shard run (accept --shard); empty for a whole run
    merged_from: list[str] = field(default_factory=list)  # the shard runs a merged run was made of (gymgate merge)
    # Each path's own rollout deadline, derived from the baseline's measured time (acceptance/limits.py); the
    # session reads it from here, and each record keeps the one it ran under (timings.deadline_s).
    deadlines: dict[str, float] = field(default_factory=dict)
    schema: int = SCHEMA

    @classmethod
    def from_json(cls, data: Any) -> RunMark:
        if not isinstance(data, dict) or set(data) - {f.name for f in fields(cls)}:
            raise ValueError("it is not a run mark")
        return cls(**data)


@dataclass(frozen=True)
class RunFolder:
    root: Path

    # -- creating ------------------------------------------------------------------------------------------------
    @classmethod
    def create(cls, label: str, run_id: str, base: Path | None = None) -> RunFolder:
        """A new, empty run folder `<stamp>-<label>-<run id>` under `base` (default: runs_dir())."""
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:60]
        path = (base or runs_dir()) / f"{stamp}-{safe}-{run_id}"
        path.mkdir(parents=True, exist_ok=False)
        return cls(path)

    def opened(self) -> RunFolder:
        """Note that this process works here: a crash's trace is written into the folder opened last."""
        _opened.append(self.root)
        return self

    # -- layout ----------------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.root.name

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def paths_dir(self) -> Path:
        return self.root / PATHS

    @property
    def logs_dir(self) -> Path:
        return self.root / LOGS

    @property
    def gym_tests_dir(self) -> Path:
        return self.root / GYM_TESTS

    def gym_tests(self, baseline_digest: str) -> dict[str, Any] | None:
        """What this candidate's run judged of Gym's own tests against the baseline of that digest (its
        gym-tests.json: `verdict`, `code`, …, and `page`, where gym-tests.html is), or None when it did not."""
        path = self.gym_tests_dir / GYM_TESTS_RESULTS
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("verdict"), str):
            return None  # not a verdict this gymgate wrote
        if (data.get("baseline") or {}).get("digest") != baseline_digest:
            return None  # another bump's (this run was a candidate against another baseline)
        return {**data, "page": str((self.gym_tests_dir / GYM_TESTS_PAGE).resolve())}

    @property
    def setup_dir(self) -> Path:
        return self.root / SETUP

    @property
    def venvs_dir(self) -> Path:
        return self.root / "venvs"

    @property
    def pytest_log(self) -> Path:
        return self.root / PYTEST_LOG

    @property
    def launcher_log(self) -> Path:
        """The forking launcher's zygote (services/launcher): what it preloaded, and anything it could not do."""
        return self.root / "launcher.log"

    @property
    def source_file(self) -> Path:
        return self.root / SOURCE

    def record_file(self, path_id: str) -> Path:
        return self.paths_dir / f"{PathId(path_id).stem}.json"

    def log(self, env: str) -> Path:
        return self.logs_dir / f"{env}.log"

    def gym_copy(self, env: str) -> Path:
        return self.root / "gym" / env

    def data_file(self, env: str, mode: str) -> Path:
        return self.root / "data" / env / f"{mode}.jsonl"

    # -- the paths the run runs (gymgate.kinds.planfile: each PathSpec as JSON) -------------------------------------
    def write_plan(self, paths: list[dict[str, Any]]) -> Path:
        """The paths this run runs, written by the harness before the session starts (a bump's two runs get the
        same plan)."""
        text = "".join(json.dumps(p, sort_keys=True) + "\n" for p in paths)
        return write_text_atomic(self.root / PLAN, text)

    def plan(self) -> list[dict[str, Any]] | None:
        """The paths the harness handed this run; None when it handed none (a session started by hand)."""
        path = self.root / PLAN
        if not path.is_file():
            return None
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    # -- the run mark, the ref and its environment -------------------------------------------------------------------
    def mark(self) -> RunMark | None:
        """run.json, or None when the folder has none; refused (UsageError) when damaged or of another schema."""
        path = self.root / MARK
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise UsageError(f"{path} is damaged ({exc}); rerun") from exc
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = (
                data.get("schema", "none (written before run folders carried one)") if isinstance(data, dict) else "?"
            )
            raise UsageError(
                f"{self.root} was written by another version of gymgate (run folder schema {found}; this gymgate "
                f"reads {SCHEMA}); rerun it with this version"
            )
        try:
            return RunMark.from_json(data)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{path} is damaged ({exc}); rerun") from exc

    def write_mark(self, mark: RunMark) -> Path:
        return write_json_atomic(self.root / MARK, asdict(mark))

    def source(self, required: bool = False) -> dict[str, Any]:
        """The resolved ref as `GymSource.to_json()` wrote it ({} when absent, unless `required`)."""
        found = _read_json(self.source_file)
        if found is None and required:
            raise UsageError(f"{self.root} is damaged: it has no {SOURCE} (which Gym ref it ran); rerun")
        return found or {}

    def write_source(self, source: dict[str, Any]) -> Path:
        return write_json_atomic(self.source_file, source)

    def write_consumer(self, consumer: dict[str, Any]) -> Path:
        return write_json_atomic(self.root / CONSUMER, consumer)

    def consumer(self) -> dict[str, Any]:
        """Which RL the run's paths were judged as ({} for a run from before profiles: RL at 7ea279ab)."""
        return _read_json(self.root / CONSUMER) or {}

    def keep_environment(self, lock: Path, environment: dict[str, Any]) -> None:
        """The lock travels with the run, so two stored runs can be compared without their checkouts."""
        shutil.copyfile(lock, self.lock)
        write_json_atomic(self.root / ENVIRONMENT, environment)

    def environment(self) -> dict[str, Any]:
        return _read_json(self.root / ENVIRONMENT) or {}

    # -- path records ----------------------------------------------------------------------------------------------
    def write_record(self, record: PathRecord) -> Path:
        return write_json_atomic(self.record_file(record.path), record.to_json())

    def has_record(self, path_id: str) -> bool:
        return self.record_file(path_id).exists()

    def record(self, path_id: str) -> PathRecord | None:
        """One path's record as written, or None when it has none or it cannot be read."""
        try:
            return _record_of(self.record_file(path_id))
        except (OSError, ValueError, TypeError):
            return None

    @property
    def originals(self) -> RunFolder:
        """Where a variant's original, run again as its oracle, keeps its record (runner/path.py)."""
        return RunFolder(self.root / ORIGINALS)

    def written_records(self, known: Container[str] = ()) -> dict[str, PathRecord]:
        """The records readable right now, by path id (the live progress view: a file being replaced is skipped).
        Files whose stem is in `known` are not read again: a live view polls twice a second, and parsing every
        record each time cost a default-set run more CPU than any Gym server (docs/benchmarks.md, issue 29)."""
        found = {}
        for file in sorted(self.paths_dir.glob("*.json")):
            if file.stem in known:
                continue
            try:
                record = _record_of(file)
            except (OSError, ValueError, TypeError):
                continue
            found[record.path] = record
        return found

    def records(self, expected: list[str] | None = None) -> dict[str, PathRecord]:
        """Every path record of the run, by path id, plus an ERROR stub for each expected path (from `expected` or the
        run's mark) that has none. A record that cannot be read is an ERROR too, never a pass."""
        records: dict[str, PathRecord] = {}
        for file in sorted(self.paths_dir.glob("*.json")):
            try:
                record = _record_of(file)
            except (OSError, ValueError, TypeError) as exc:
                reason = f"{NO_RECORD_REASON}: {file.name} is unreadable ({exc})"
                record = PathRecord.stub(PathId.from_stem(file.stem), ERROR, reason, blame=HARNESS)
            records[record.path] = record
        if expected is None:
            mark = self.mark()
            expected = mark.expected if mark else []
        for path in expected:
            if path not in records:
                reason = (
                    f"{NO_RECORD_REASON}: the path left no result (its worker died, or the session ended before it)"
                )
                records[path] = PathRecord.stub(path, ERROR, reason, blame=HARNESS)
                records[path].missing = True
        return records

    # -- the session's live state ----------------------------------------------------------------------------------
    def write_service_status(self, status: EnvStatus) -> Path:
        return write_json_atomic(self.root / SERVICES / f"{status.env}.json", status.to_json())

    def service_statuses(self) -> dict[str, EnvStatus]:
        """Each environment's latest start-up status, by environment (a file being replaced is skipped)."""
        found = {}
        for env, data in _read_all(self.root / SERVICES).items():
            try:
                found[env] = EnvStatus.from_json(data)
            except (TypeError, ValueError):
                continue  # not a status (yet): as a file being replaced, the next read sees it
        return found

    def write_worker(self, worker: str, record: WorkerRecord) -> Path:
        return write_json_atomic(self.root / WORKERS / f"{worker}.json", record.to_json())

    def workers(self) -> dict[str, WorkerRecord]:
        """Every worker's record (read after the session ended: one that cannot be read is damage, not absence)."""
        found = {}
        for path in sorted((self.root / WORKERS).glob("*.json")):
            data = _read_json(path)
            if data is None:
                continue  # removed since the listing
            try:
                found[path.stem] = WorkerRecord.from_json(data)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"{path} is damaged ({exc}); rerun") from exc
        return found

    def write_up_record(self, record: dict[str, Any]) -> Path:
        return write_json_atomic(self.root / UP_RECORD, record)

    def up_record(self) -> dict[str, Any]:
        return _read_json(self.root / UP_RECORD) or {}

    def lifecycle_failures(self) -> list[str]:
        """What did not stop within its bounds (each was killed): the run mark's and every worker's."""
        mark = self.mark()
        found = list(mark.lifecycle) if mark else []
        for _, worker in sorted(self.workers().items()):
            for env, errors in sorted((worker.stop_errors or {}).items()):
                found += [f"{env}: {error}" for error in errors]
        return found

    # -- reruns ----------------------------------------------------------------------------------------------------
    def attempt(self, role: str, n: int) -> RunFolder:
        """Attempt `n` (n >= 2) of the reruns on `role` ("candidate" or "baseline"); attempt 1 is this run."""
        return RunFolder(self.root / RERUNS / f"{role}-{n}")

    def attempts(self) -> Iterator[tuple[str, int, RunFolder]]:
        """The stored attempt folders, in attempt order."""
        found = []
        for folder in (self.root / RERUNS).glob("*-*"):
            role, _, n = folder.name.rpartition("-")
            if n.isdigit():
                found.append((int(n), role, RunFolder(folder)))
        for n, role, folder in sorted(found, key=lambda item: item[:2]):
            yield role, n, folder

    def take_files_of(self, other: RunFolder, worker_prefix: str) -> None:
        """Copy another run's path records, start-up statuses, Gym logs and worker records into this one (a merge
        of shards: their environments, so their file names, are disjoint; workers are renamed apart)."""
        for sub in (PATHS, SERVICES, LOGS):
            if (other.root / sub).is_dir():
                for file in sorted((other.root / sub).iterdir()):
                    if file.is_file():
                        (self.root / sub).mkdir(parents=True, exist_ok=True)
                        shutil.copy2(file, self.root / sub / file.name)
        for file in sorted((other.root / WORKERS).glob("*.json")):
            (self.root / WORKERS).mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, self.root / WORKERS / f"{worker_prefix}{file.name}")
        if other.pytest_log.is_file():
            with self.pytest_log.open("a") as log:
                log.write(f"==== {other.name} ====\n{other.pytest_log.read_text(errors='replace')}\n")

    def reruns_manifest(self) -> dict[str, Any] | None:
        return _read_json(self.root / RERUNS / RERUNS_MANIFEST)

    def write_reruns_manifest(self, manifest: dict[str, Any]) -> Path:
        return write_json_atomic(self.root / RERUNS / RERUNS_MANIFEST, manifest)


def runs_dir() -> Path:
    """Where run folders go by default: $GYMGATE_RUNS, else runs/ in the checkout."""
    return Path(os.environ.get(RUNS_VAR) or repo_root() / "runs")


def new_run_id() -> str:
    return secrets.token_hex(4)


def stored_runs(base: Path) -> Iterator[RunFolder]:
    """Every folder under `base` that has a run mark (of any version: reading the mark decides)."""
    for mark in sorted(base.glob(f"*/{MARK}")):
        yield RunFolder(mark.parent)


def write_crash(exc: BaseException) -> Path:
    """The traceback of gymgate's own crash, into the run folder this process opened last (else a temp file).
    The run stays marked incomplete, so it is never compared or reused."""

    text = "".join(traceback.format_exception(exc))
    if _opened and _opened[-1].is_dir():
        target = _opened[-1] / CRASH
    else:
        handle, name = tempfile.mkstemp(prefix="gymgate-crash-", suffix=".txt")
        os.close(handle)
        target = Path(name)
    target.write_text(text)
    return target


def _record_of(file: Path) -> PathRecord:
    record = PathRecord.from_json(json.loads(file.read_text()))
    if record.file_stem != file.stem:
        raise ValueError(f"it holds the record of {record.path}")
    return record


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} is damaged ({exc}); rerun") from exc


def _read_all(directory: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(directory.glob("*.json")):
        try:
            found[path.stem] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being replaced right now; the next read sees it
    return found
