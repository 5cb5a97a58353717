"""Gym's own tests across a bump (gymgate.gymtests): how a test's runs on both releases become its category, how
pytest's report log is read, which folders a scope covers, how a suite's tree is laid over, how reviews apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gymgate.cases.environments import Environment
from gymgate.compare import acks as ack_files
from gymgate.errors import EXIT_FAILED, EXIT_OK, EXIT_UNJUDGED
from gymgate.gymtests import acks as gym_acks
from gymgate.gymtests import overlay
from gymgate.gymtests.bump import GymTestsRun
from gymgate.gymtests.evidence import evidence
from gymgate.gymtests.execute import ABSENT, FINISHED, RootRun, TestRun, read_report_log
from gymgate.gymtests.judge import Observed, Side, SideRuns, TestCategory, judge_side, judge_test, to_confirm, vanished
from gymgate.gymtests.report import terminal_lines
from gymgate.gymtests.roots import CORE, Root, root_of, root_of_test, roots_for

P, F, S = TestRun("passed"), TestRun("failed", "AssertionError: assert None == '1'"), TestRun("skipped", "needs a GPU")


def obs(*runs: TestRun) -> Observed:
    return Observed(list(runs))


def category(own, other, of=Side.BASELINE, uncollected=None, status=FINISHED):
    return judge_test("t.py::test_x", "mcqa", of, own, other, uncollected, status).category


@pytest.mark.parametrize(
    ("own", "other", "of", "expected"),
    [
        (obs(P), obs(P), Side.BASELINE, TestCategory.PASS_BOTH),
        (obs(P, P), obs(F, F), Side.BASELINE, TestCategory.NEWLY_FAILING),
        (obs(P, P), obs(P, F), Side.BASELINE, TestCategory.NEWLY_FAILING),  # fails once on the candidate: red
        (obs(P, P), obs(F, F), Side.CANDIDATE, TestCategory.FIXED),
        (obs(P, F), obs(F, F), Side.BASELINE, TestCategory.EXCLUDED),  # flaky on its own release
        (obs(F, F), obs(P), Side.BASELINE, TestCategory.EXCLUDED),
        (obs(F, F), obs(F), Side.BASELINE, TestCategory.SAME_FAIL),
        (obs(S), obs(F), Side.BASELINE, TestCategory.CANNOT_RUN),
        (
            obs(TestRun("failed", "requests.exceptions.ProxyError: Unable to connect to proxy")),
            obs(),
            Side.BASELINE,
            TestCategory.CANNOT_RUN,
        ),
        (obs(P), obs(S), Side.BASELINE, TestCategory.NEWLY_FAILING),  # skipped on the candidate: no longer checked
        (obs(P), obs(TestRun("hung", "still running")), Side.BASELINE, TestCategory.NEWLY_FAILING),
    ],
)
def test_a_tests_category_from_its_runs(own, other, of, expected):
    assert category(own, other, of) == expected


def test_a_test_without_a_record_on_the_other_side_fails_closed_or_is_unjudged():
    assert category(obs(P), obs()) == TestCategory.NEWLY_FAILING  # its file collected; the test is gone
    assert category(obs(P), obs(), status="pytest ended with exit status 3") == TestCategory.UNJUDGED
    assert category(obs(P), obs(), status=ABSENT) == TestCategory.NEWLY_FAILING  # its server is gone


def test_an_import_that_fails_on_the_other_side_names_what_vanished():
    gone = "ImportError: cannot import name 'LineageStore' from 'nemo_gym.token_id_capture' (/x/__init__.py)"
    verdict = judge_test("t.py::test_x", "model vllm_model", Side.BASELINE, obs(P), obs(), gone, FINISHED)
    assert (verdict.category, verdict.vanished) == (TestCategory.INTERFACE, "nemo_gym.token_id_capture.LineageStore")
    assert category(obs(P), obs(), Side.CANDIDATE, gone) == TestCategory.NEW_INTERFACE
    other_error = "SyntaxError: invalid syntax"
    assert category(obs(P), obs(), Side.BASELINE, other_error) == TestCategory.NEWLY_FAILING
    assert vanished("ModuleNotFoundError: No module named 'lcb_integration'") == "lcb_integration"
    assert vanished("AssertionError: 1 == 2") is None


def _root_run(root: Root, tests: dict[str, TestRun], uncollected=None, status=FINISHED) -> RootRun:
    return RootRun(root, dict(tests), dict(uncollected or {}), status)


def test_a_side_counts_uncollected_files_and_skips_roots_it_has_no_tests_for():
    mcqa = Root("resources_servers/mcqa", "mcqa")
    test = "resources_servers/mcqa/tests/test_app.py::test_verify"
    own, other = SideRuns(), SideRuns()
    own.add([_root_run(mcqa, {test: P}, {"resources_servers/mcqa/tests/test_x.py": "No module named 'torch'"})])
    other.add([_root_run(mcqa, {test: F})])
    verdicts = judge_side(Side.BASELINE, own, other, {mcqa.path: mcqa.label})
    assert [(v.test, v.category) for v in verdicts] == [
        (test, TestCategory.NEWLY_FAILING),
        ("resources_servers/mcqa/tests/test_x.py", TestCategory.CANNOT_RUN),
    ]
    assert [v.test for v in to_confirm(verdicts)] == [test]
    none = SideRuns()
    none.add([_root_run(mcqa, {}, status="no tests")])
    assert judge_side(Side.BASELINE, none, other, {mcqa.path: mcqa.label}) == []


def test_the_report_log_gives_each_tests_outcome_and_the_tests_a_kill_interrupted(tmp_path):
    root = Root("resources_servers/mcqa", "mcqa")
    base = "resources_servers/mcqa/tests/test_app.py"
    lines = [
        {
            "$report_type": "CollectReport",
            "nodeid": f"{base[:-11]}test_gone.py",
            "outcome": "failed",
            "longrepr": "Traceback\nE   ModuleNotFoundError: No module named 'x'",
        },
        {"$report_type": "TestReport", "nodeid": f"{base}::test_ok", "when": "setup", "outcome": "passed"},
        {"$report_type": "TestReport", "nodeid": f"{base}::test_ok", "when": "call", "outcome": "passed"},
        {"$report_type": "TestReport", "nodeid": f"{base}::test_ok", "when": "teardown", "outcome": "passed"},
        {
            "$report_type": "TestReport",
            "nodeid": f"{base}::test_bad",
            "when": "call",
            "outcome": "failed",
            "longrepr": {"reprcrash": {"message": "assert None == '1'\nmore"}},
        },
        {
            "$report_type": "TestReport",
            "nodeid": f"{base}::test_gpu",
            "when": "setup",
            "outcome": "skipped",
            "longrepr": ["x.py", 3, "Skipped: needs a GPU"],
        },
        {"$report_type": "TestReport", "nodeid": f"{base}::test_gpu", "when": "teardown", "outcome": "passed"},
        {
            "$report_type": "TestReport",
            "nodeid": f"{base}::test_xfail",
            "when": "call",
            "outcome": "skipped",
            "wasxfail": "",
        },
        {"$report_type": "TestReport", "nodeid": f"{base}::test_slow", "when": "setup", "outcome": "passed"},
        {
            "$report_type": "TestReport",
            "nodeid": "elsewhere/tests/test_y.py::test_z",
            "when": "call",
            "outcome": "failed",
        },
    ]
    log = tmp_path / "r.jsonl"
    log.write_text("\n".join(json.dumps(line) for line in lines) + '\n{"$report_type": "TestRep')  # cut by a kill
    run = RootRun(root)
    started = read_report_log(log, {root.path: run})
    assert started == {f"{base}::test_slow"}
    assert {k.rsplit("::", 1)[-1]: v.outcome for k, v in run.tests.items()} == {
        "test_ok": "passed",
        "test_bad": "failed",
        "test_gpu": "skipped",
        "test_xfail": "passed",  # failed as it is marked to
    }
    assert run.tests[f"{base}::test_bad"].message == "assert None == '1'"
    assert run.tests[f"{base}::test_gpu"].message == "needs a GPU"
    assert run.uncollected == {f"{base[:-11]}test_gone.py": "ModuleNotFoundError: No module named 'x'"}


def _env(name: str, server: str, agent: str = "simple_agent") -> Environment:
    return Environment(name, "c.yaml", server, agent, (f"resources_servers/{server}", f"responses_api_agents/{agent}"))


def test_a_scope_covers_the_environments_servers_agents_and_model_or_the_core():
    envs = [_env("structured_outputs_v4", "structured_outputs"), _env("mcqa", "mcqa")]
    labels = [r.label for r in roots_for(envs, "envs")]
    assert labels == ["mcqa", "structured_outputs_v4", "agent simple_agent", "model vllm_model"]
    assert [r.label for r in roots_for(envs, "core")] == [CORE]
    assert roots_for(envs, "all")[-1] == Root("", CORE) and roots_for(envs, "none") == []
    roots = roots_for(envs, "all")
    assert root_of("resources_servers/mcqa/tests/test_app.py::t", roots).label == "mcqa"
    assert root_of("tests/unit_tests/test_x.py::t", roots).label == CORE
    assert root_of("docs/x.py::t", roots) is None


def test_a_suite_tree_is_the_codes_with_the_tests_of_the_other_release(tmp_path):
    code, tests = tmp_path / "code", tmp_path / "tests"
    for tree, version in ((code, "new"), (tests, "old")):
        (tree / "resources_servers/mcqa/tests").mkdir(parents=True)
        (tree / "resources_servers/mcqa/app.py").write_text(f"# {version} code")
        (tree / "resources_servers/mcqa/tests/test_app.py").write_text(f"# {version} test")
        (tree / "conftest.py").write_text(f"# {version} conftest")
        (tree / "pyproject.toml").write_text(f"# {version} config")
    (code / "resources_servers/mcqa/tests/test_only_new.py").write_text("")
    into = tmp_path / "suite"
    config = overlay.build(code, tests, [Root("resources_servers/mcqa", "mcqa")], into)
    assert (into / "resources_servers/mcqa/app.py").read_text() == "# new code"
    assert (into / "resources_servers/mcqa/tests/test_app.py").read_text() == "# old test"
    assert not (into / "resources_servers/mcqa/tests/test_only_new.py").exists()
    assert (into / "conftest.py").read_text() == "# old conftest"
    assert config.read_text() == "# old config"
    assert (code / "resources_servers/mcqa/tests/test_only_new.py").exists()  # the code's tree is untouched


SOURCES = ({"name": "0.6.0", "digest": "a" * 64, "kind": "pin"}, {"name": "0.7.0", "digest": "b" * 64, "kind": "pin"})


def _run(tmp_path: Path, *verdicts) -> GymTestsRun:
    run = GymTestsRun(tmp_path, *SOURCES, "envs")
    run.verdicts = list(verdicts)
    return run


def _failing(tmp_path: Path):
    (tmp_path / "old/t").mkdir(parents=True)
    (tmp_path / "new/t").mkdir(parents=True)
    (tmp_path / "old/t/test_a.py").write_text("def test_x():\n    assert f() == '1'\n\n\ndef test_w():\n    pass\n")
    (tmp_path / "new/t/test_a.py").write_text("def test_x():\n    assert f() is None\n\n\ndef test_w():\n    return\n")
    verdict = judge_test("t/test_a.py::test_x", "math_with_judge", Side.BASELINE, obs(P, P), obs(F, F), None, FINISHED)
    evidence([verdict], tmp_path / "old", tmp_path / "new")
    return verdict


def test_a_newly_failing_test_fails_the_gate_until_a_reviewed_entry_covers_it(tmp_path):
    verdict = _failing(tmp_path)
    assert verdict.text.startswith("sha256:") and "+    assert f() is None" in verdict.diff
    assert "test_w" not in verdict.diff  # the test's own change, not its file's
    gone = judge_test("t/test_b.py::test_y", "mcqa", Side.BASELINE, obs(P), obs(), "No module named 'x.y'", FINISHED)
    run = _run(tmp_path, verdict, gone)
    assert run.code == EXIT_FAILED
    lines = terminal_lines(run)
    assert "math_with_judge: 1 of 1 tests of 0.6.0 fail on 0.7.0: test_x" in lines[1]
    assert any("x.y is gone from 0.7.0" in line for line in lines)
    acks = tmp_path / "acks"
    path, added = gym_acks.draft(acks, *SOURCES, run.verdicts)
    assert (
        added == 2
        and gym_acks.apply(ack_files.Reviews([acks]), *SOURCES, run.verdicts) == []
        and run.code == EXIT_FAILED
    )  # no reason
    text = path.read_text().replace('reason = ""', 'reason = "0.7.0 returns None for an unboxed answer on purpose"', 1)
    path.write_text(text.replace('reason = ""', 'reason = "x.y moved"', 1))
    assert gym_acks.apply(ack_files.Reviews([acks]), *SOURCES, run.verdicts) == []
    assert verdict.ack.startswith("0.7.0 returns None") and gone.ack == "x.y moved"
    assert run.code == EXIT_OK and "no regression" in run.verdict and "2 reviewed" in run.verdict
    assert ack_files.read(acks)[0].tables["test"][0]["test"] == "t/test_a.py::test_x"


def test_a_review_of_other_text_or_another_pair_does_not_cover_it(tmp_path):
    verdict = _failing(tmp_path)
    acks = tmp_path / "acks"
    gym_acks.draft(acks, *SOURCES, [verdict])
    path = next(acks.glob("*.toml"))
    path.write_text(path.read_text().replace('reason = ""', 'reason = "reviewed"'))
    other = judge_test(verdict.test, verdict.label, Side.BASELINE, obs(P), obs(F), None, FINISHED)
    other.text = "sha256:0000000000000000"  # the same test, written otherwise: another pinned behaviour
    assert gym_acks.apply(ack_files.Reviews([acks]), *SOURCES, [other]) and not other.ack  # and the entry is stale here
    assert gym_acks.apply(ack_files.Reviews([acks]), *SOURCES, []) == []  # a run that did not judge the test: not stale
    downgrade = judge_test(verdict.test, verdict.label, Side.BASELINE, obs(P), obs(F), None, FINISHED)
    downgrade.text = verdict.text
    gym_acks.apply(ack_files.Reviews([acks]), SOURCES[1], SOURCES[0], [downgrade])
    assert not downgrade.ack  # reviews are directed


def test_a_chain_of_reviewed_steps_covers_the_same_test_text(tmp_path):
    verdict = _failing(tmp_path)
    middle = {"name": "0.6.5", "digest": "c" * 64, "kind": "pin"}
    acks = tmp_path / "acks"
    gym_acks.draft(acks, SOURCES[0], middle, [verdict])
    ack_files.draft(acks, middle, SOURCES[1], {})  # a clean step
    for path in acks.glob("*.toml"):
        path.write_text(path.read_text().replace('reason = ""', 'reason = "unboxed answers are None since 0.6.5"'))
    verdict.ack = ""
    gym_acks.apply(ack_files.Reviews([acks]), *SOURCES, [verdict])
    assert verdict.ack == "0.6.0 → 0.6.5: unboxed answers are None since 0.6.5"


def test_nothing_judged_is_unjudged_and_stored_runs_read_back(tmp_path):
    run = _run(tmp_path)
    run.why_not = "a local wheel ships no tests"
    assert run.code == EXIT_UNJUDGED and "cannot judge" in run.verdict
    unjudged = judge_test("t.py::t", "mcqa", Side.BASELINE, obs(P), obs(), None, "stopped after 900 s")
    run = _run(tmp_path, unjudged)
    assert run.code == EXIT_UNJUDGED
    (tmp_path / "gym-tests.json").write_text(json.dumps(run.to_json()))
    assert GymTestsRun.read(tmp_path).verdicts == run.verdicts


def test_a_node_id_alone_names_its_root():
    assert root_of_test("tests/unit_tests/test_x.py::t") == Root("", CORE)
    assert root_of_test("resources_servers/mcqa/tests/test_app.py::T::t") == Root("resources_servers/mcqa", "mcqa")
    agent = root_of_test("responses_api_agents/simple_agent/tests/test_app.py::t")
    assert agent == Root("responses_api_agents/simple_agent", "agent simple_agent")
    with pytest.raises(ValueError, match="not in Gym's core"):
        root_of_test("docs/conf.py::t")


def test_bisecting_a_test_refuses_what_is_not_a_node_id(capsys):
    from gymgate.cli import main  # noqa: PLC0415 - this test only

    assert main(["bisect", "--good", "a", "--bad", "b", "--gym-test", "test_x"]) == 2
    assert "give a test's node id" in capsys.readouterr().err
    assert main(["bisect", "--good", "a", "--bad", "b", "--gym-test", "x.py::t", "--load-metric", "e:m"]) == 2
    assert "not both" in capsys.readouterr().err


def test_every_committed_review_of_gyms_own_tests_has_a_reason():
    """The reviewed steps between the releases (acks/): a drafted entry left without a reason acknowledges nothing,
    so a committed one is a review that was never done."""
    for step in ack_files.read(ack_files.acks_dir()):
        for table in (gym_acks.TEST, gym_acks.INTERFACE):
            for entry in step.tables.get(table, []):
                assert str(entry.get("reason", "")).strip(), (
                    step.file.name,
                    entry.get("test") or entry.get("vanished"),
                )


def test_a_candidates_run_shows_gym_tests_only_against_the_baseline_they_ran_with(tmp_path):
    from gymgate.runfolder import RunFolder  # noqa: PLC0415 - this test only

    folder = RunFolder(tmp_path)
    assert folder.gym_tests("a" * 64) is None
    run = _run(folder.gym_tests_dir, _failing(tmp_path))
    folder.gym_tests_dir.mkdir()
    (folder.gym_tests_dir / "gym-tests.json").write_text(json.dumps(run.to_json()))
    shown = folder.gym_tests(SOURCES[0]["digest"])
    assert shown["verdict"] == run.verdict and shown["code"] == EXIT_FAILED and shown["page"].endswith(".html")
    assert folder.gym_tests("c" * 64) is None  # judged against another baseline
    (folder.gym_tests_dir / "gym-tests.json").write_text("{}")
    assert folder.gym_tests(SOURCES[0]["digest"]) is None  # not a verdict


def test_an_interrupt_stops_every_running_suite_process_within_its_grace(tmp_path):
    """Ctrl-C during a suite: each server's pytest (here a stand-in that never ends) is stopped by its process group,
    nothing waits for its bound, and the interrupt goes on to the caller."""
    import _thread  # noqa: PLC0415 - this test only
    import threading  # noqa: PLC0415 - this test only
    import time  # noqa: PLC0415 - this test only
    from types import SimpleNamespace  # noqa: PLC0415 - this test only

    from gymgate.gymtests.execute import Suite, run_suite  # noqa: PLC0415 - this test only
    from gymgate.processes import alive  # noqa: PLC0415 - this test only

    pids = tmp_path / "pids"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 600\n")
    python.chmod(0o755)
    env = SimpleNamespace(python=python, path=tmp_path, bin=tmp_path)
    roots = [Root(f"resources_servers/s{i}", f"s{i}") for i in range(3)]
    for root in roots:
        (tmp_path / "tree" / root.tests).mkdir(parents=True)
    suite = Suite("a", "b", tmp_path / "tree", tmp_path / "cfg", env, tmp_path)
    threading.Timer(2.0, _thread.interrupt_main).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, roots, tmp_path / "logs", workers=2)
    assert time.monotonic() - started < 30
    started_pids = [int(p) for p in pids.read_text().split()]
    assert len(started_pids) == 2  # two at once; the third never started
    assert not any(alive(pid) for pid in started_pids)
