"""`gymgate compare` and `gymgate ack`: two stored runs judged again (nothing is run), and the acknowledgements of
their contract changes drafted for a person to review."""

from __future__ import annotations

from pathlib import Path

from gymgate.compare import acks as ack_files
from gymgate.compare.acks import Reviews
from gymgate.compare.runs import compare_runs
from gymgate.errors import EXIT_OK, UsageError
from gymgate.harness.reports import compare_and_report
from gymgate.report.outputs import RESULTS, compared_baseline, read_summary
from gymgate.runfolder import runs_dir as default_runs_dir
from gymgate.runfolder.folder import stored_runs


def compare_command(
    baseline_run: Path, candidate_run: Path, out: Path | None, verbose: bool, json: bool, acks: Reviews
) -> tuple[int, dict]:
    """`gymgate compare`: two stored runs, every report written; nothing is run."""

    out = out or candidate_run
    code = compare_and_report(baseline_run, candidate_run, out, full=verbose and not json, acks=acks)
    return code, read_summary(out)


def ack_command(compared: list[Path], acks: Reviews, review: bool = False, runs_dir: Path | None = None) -> int:
    """`gymgate ack`: draft the acknowledgements of a comparison's unacknowledged contract changes (`--review`:
    walk them with a person)."""

    if len(compared) > 2:
        raise UsageError("gymgate ack takes one compared candidate run, or a baseline run and a candidate run")
    runs = compared or [newest_compared(runs_dir or default_runs_dir())]
    baseline, candidate = runs if len(runs) == 2 else (_compared_baseline(runs[0]), runs[0])
    directory = acks.target()
    _draft_gym_tests(candidate, acks, directory)
    comparison = compare_runs(baseline, candidate, acks)
    pending = {p.path: p.changes for p in comparison.changed}
    open_changes = [g for g in comparison.change_groups() if g.failing]
    if review and open_changes:
        from gymgate.harness.ack_review import review as walk  # noqa: PLC0415 - only a person's review walks

        done = walk(comparison, directory, acks)
        print(
            f"\nwrote {done.file}: {done.accepted} accepted, {done.skipped} skipped (drafted without a reason), "
            f"{done.left} left for another pass. Commit the file, and compare again."
        )
        return EXIT_OK
    if not open_changes:
        print(f"nothing to acknowledge: no unacknowledged contract change between {baseline} and {candidate}")
        if comparison.exit_code == EXIT_OK and comparison.baseline.get("digest") != comparison.candidate.get("digest"):
            # A clean step is reviewed too: its file links a chain of reviews that longer bumps compose along.
            path, _, _ = ack_files.draft(directory, comparison.baseline, comparison.candidate, {})
            print(f"wrote {path}: a reviewed step with nothing to acknowledge (it links chains of reviews)")
        return EXIT_OK
    path, added, extended = ack_files.draft(directory, comparison.baseline, comparison.candidate, pending)
    print(f"wrote {path}: {added} new change(s) to review ({len(open_changes)} unacknowledged in all).")
    if extended:
        # The same change, with the same values, reviewed on other paths: the entry now names these too. Its reason
        # applies only if it explains them as well: the file's diff shows which paths were added.
        print(
            f"{len(extended)} path(s) added to entries already reviewed (check the reason holds for them): "
            + ", ".join(extended[:8])
            + (", …" if len(extended) > 8 else "")
        )
    print("Write a one-line reason for each new change, commit the file, and compare again.")
    return EXIT_OK


def _draft_gym_tests(candidate: Path, acks: Reviews, directory: Path) -> None:
    """The candidate's run judged Gym's own tests (`accept --gym-tests`): draft an entry for each unreviewed test of
    the baseline it breaks and each name those tests import that it lost, with the evidence (the failure, how the
    candidate changed the test's file)."""
    from gymgate.gymtests import acks as gym_acks  # noqa: PLC0415 - only when the run judged Gym's own tests
    from gymgate.gymtests.bump import RESULTS_FILE, GymTestsRun  # noqa: PLC0415 - only when the run judged Gym's own tests
    from gymgate.harness.gym_tests import folder_of  # noqa: PLC0415 - only when the run judged Gym's own tests

    folder = folder_of(candidate)
    if not (folder / RESULTS_FILE).is_file():
        return
    run = GymTestsRun.read(folder)
    gym_acks.apply(acks, run.baseline, run.candidate, run.verdicts)  # reviewed since the run: not drafted again
    open_tests = [v for v in run.verdicts if v.gating]
    if not open_tests:
        print(f"Gym's own tests: nothing to acknowledge in {folder}")
        return
    path, added = gym_acks.draft(directory, run.baseline, run.candidate, open_tests)
    print(f"wrote {path}: {added} new entr(ies) for Gym's own tests ({len(open_tests)} unreviewed tests).")


def newest_compared(folder: Path) -> Path:
    """The newest run in `folder` that a comparison judged (it holds results.json naming its baseline)."""
    judged = [run.root for run in stored_runs(folder) if compared_baseline(run.root) is not None]
    if not judged:
        raise UsageError(f"no compared run in {folder} to acknowledge; pass the candidate's run folder")
    newest = max(judged, key=lambda root: (root / RESULTS).stat().st_mtime)
    print(f"acknowledging {newest} (the newest compared run in {folder})")
    return newest


def _compared_baseline(candidate: Path) -> Path:
    """The baseline run a compared candidate was judged against (its results.json says)."""

    found = compared_baseline(candidate)
    if found is None:
        raise UsageError(
            f"{candidate} has no comparison (results.json) to acknowledge; pass BASELINE CANDIDATE run folders"
        )
    return found
