"""`bisect --gym-test NODEID`: the first commit at which one of the good ref's own tests (as the good ref wrote it)
fails against the commit's code. Each step builds (or reuses) the commit's environment and runs that one test there
(gymgate.gymtests: the good ref's tests laid over the commit's tree); passed: good; failed, hung, skipped or no
longer collected: bad; a commit that cannot be built: skip; a pytest that did not finish: tried again, up to
bisection.ATTEMPTS times, then skipped. The test must pass on the good ref and fail on the bad one."""

from __future__ import annotations

import tempfile
from pathlib import Path

from gymgate import streams
from gymgate.envs.prepare import prepare_env
from gymgate.errors import EXIT_FAILED, EXIT_OK, BuildError, UsageError
from gymgate.gymtests import overlay
from gymgate.gymtests.execute import FINISHED, PASSED, Suite, run_suite
from gymgate.gymtests.layer import layer_for
from gymgate.gymtests.roots import Root, root_of_test
from gymgate.gymtests.trees import source_tree
from gymgate.harness.bisection import ATTEMPTS, BAD, FLAKY, GOOD, SKIP, bisect_by, resolve_pair, write_predicate_bisect
from gymgate.harness.matrix import report_dir


def run_one(test: str, root: Root, tests_tree: Path, code, folder: Path) -> tuple[str, str]:
    """(verdict, why) of `test` (of `tests_tree`) over the code of `code` (a GymSource), run in `folder`."""
    try:
        env = prepare_env(code)
    except BuildError as exc:
        return SKIP, f"cannot be built: {str(exc).splitlines()[0]}"
    tree = folder / "tree"
    config = overlay.build(source_tree(code), tests_tree, [root], tree)
    suite = Suite("good", code.name, tree, config, env, layer_for(env.python, env.interpreter.version))
    (result,) = run_suite(suite, [root], folder / "logs", workers=1, only={root.path: [test]})
    found = result.tests.get(test)
    if found is not None:
        return (GOOD, "passes") if found.outcome == PASSED else (BAD, f"{found.outcome}: {found.message}")
    why = next((w for f, w in result.uncollected.items() if test.startswith(f)), "")
    if why or result.status == FINISHED:
        return BAD, f"does not collect: {why}" if why else "not collected"
    return "unsure", result.status


def gym_test_bisect(good_ref: str, bad_ref: str, repo: str | None, test: str, out: Path):
    try:
        root = root_of_test(test)
    except ValueError as exc:
        raise UsageError(f"--gym-test: {exc}") from None
    good, bad = resolve_pair(good_ref, bad_ref, repo)
    tests_tree = source_tree(good)
    scratch = Path(tempfile.mkdtemp(prefix="gg-bisect-test-", dir=out))
    verdict, why = run_one(test, root, tests_tree, good, scratch / "good")
    if verdict != GOOD:
        raise UsageError(f"{test} does not pass on the good ref {good_ref} ({verdict}: {why})")

    def judge(source) -> tuple[str, str, list]:
        folders = []
        for attempt in range(ATTEMPTS):
            folder = scratch / f"{source.commit[:12]}-{attempt}"
            folders.append(str(folder))
            verdict, why = run_one(test, root, tests_tree, source, folder)
            if verdict in (GOOD, BAD, SKIP):
                return verdict, why, folders
        return FLAKY, f"did not finish in {ATTEMPTS} tries: {why}", folders

    return bisect_by(good, bad, f"{good_ref}'s {test}", judge)


def gym_test_bisect_command(good, bad, gym_repo, out, runs_dir, test: str) -> tuple[int, dict]:
    if "::" not in test:
        raise UsageError(f"--gym-test {test!r}: give a test's node id (path::name), as a report lists it")
    out = out or report_dir(runs_dir, "bisect")
    out.mkdir(parents=True, exist_ok=True)
    result = gym_test_bisect(good, bad, gym_repo, test, out)
    written = write_predicate_bisect(result, out, "bisect-gym-test", "Bisect of one of Gym's own tests")
    line = f"bisect of {test}: first bad commit {result.first_bad or 'hidden by skipped steps'}"
    print("\n" + line, file=streams.view())
    print("written: " + ", ".join(str(p) for p in written), file=streams.view())
    code = EXIT_FAILED if result.first_bad or result.suspects else EXIT_OK
    return code, {"kind": "bisect", "exit_code": code, "verdict": line, "written": [str(p) for p in written]}
