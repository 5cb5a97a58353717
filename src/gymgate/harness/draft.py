"""`gymgate case new`: a drafted case run on the real Gym until it says what its paths observe (cases/draft.py
drafts and renders it; this runs it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gymgate.cases.draft import (
    add_closing_turn,
    draft_case,
    observed_expect,
    observed_metadata,
    observed_tool_outputs,
    render,
    separation,
    wants_another_turn,
)
from gymgate.cases.draft import keep_scripts as keep_finished_scripts
from gymgate.cases.environments import all_environments, new_case_dir
from gymgate.cases.named import load_environments
from gymgate.errors import EXIT_FAILED, EXIT_OK, EXIT_UNJUDGED, JUDGED, UsageError
from gymgate.harness.executor import run_ref
from gymgate.harness.run_options import RunOptions
from gymgate.kinds import planfile
from gymgate.kinds.handwritten import case_paths
from gymgate.refs import resolve_ref
from gymgate.refs.distribution import Distribution
from gymgate.runfolder import RunFolder


def case_new(
    name: str,
    server: str | None,
    config: str | None,
    row: int,
    force: bool,
    keep_scripts: bool,
    gym_ref: str,
    gym_repo: str | None,
    runs_dir: Path | None,
) -> int:
    """`gymgate case new`: draft a case, run both its paths on the real Gym (again while the agent asks for another
    turn), write what they observed. Exit 0 when accepted earned the top reward and rejected less, 1 when they did
    not separate, 2 when the paths could not run."""

    target = new_case_dir() / f"{name}.toml"
    target.parent.mkdir(parents=True, exist_ok=True)
    taken = [e for e in all_environments() if e.name == name and e.case_file != target]
    replaceable = (force or keep_scripts) and target.exists() and "[draft]" in target.read_text()
    if taken or (target.exists() and not replaceable):
        where = taken[0].case_file if taken else target
        raise UsageError(f"a case named {name} exists ({where}); pick another name (or --force for a draft)")
    source = resolve_ref(gym_ref, gym_repo)
    draft = draft_case(Distribution(source), name, server or name, row, config)
    if keep_scripts:
        if not target.is_file():
            raise UsageError(f"--keep-scripts: {target} does not exist; draft it first")
        keep_finished_scripts(draft, target.read_text())
    target.write_text(render(draft, {}, "drafted; its paths have not run yet"))
    print(f"drafted {target} from {draft.config.path}, row {draft.line} of {draft.row_file}", flush=True)
    opts = RunOptions(envs=[name], runs_dir=runs_dir, cache=False, workers="1")
    while True:
        planned = case_paths(*load_environments([name]))  # the draft as written now: its scripts change as it runs
        paths = [p.id for p in planned]
        ran = run_ref(source, paths, replace(opts, plan=tuple(planfile.to_json(p) for p in planned)))
        records = {r.mode: r for r in RunFolder(ran.dir).records(paths).values()}
        if ran.code not in JUDGED:  # the session itself did not finish: nothing was learnt about the scripts
            print(f"gymgate: error: the draft's paths could not run; see {ran.dir}; {target} is left as drafted")
            return EXIT_UNJUDGED
        if not (wants_another_turn(records) and add_closing_turn(draft)):
            break
        print("the agent asked the model again after the scripted turns: one more turn, and again", flush=True)
        target.write_text(render(draft, {}, "drafted; its paths have not run yet"))
    problems = draft.problems + separation(records)
    # What the paths earned becomes the expectation only when the two modes tell right from wrong.
    expects = {} if problems else {mode: observed_expect(r, draft.row) for mode, r in records.items()}
    why = f"drafted by gymgate case new from {source.name} (run {ran.dir.name}); "
    why += ("it did not separate: " + "; ".join(problems)) if problems else "review the scripts and expected values"
    metadata = observed_metadata(records["accepted"], draft.row, draft.config.server_key) if not problems else None
    tools = {mode: observed_tool_outputs(r) for mode, r in records.items()} if not problems else None
    target.write_text(render(draft, expects, why, metadata, tools))
    print(f"\nwrote {target} (marked [draft]: accept refuses it until a person removes the mark)")
    for problem in problems:
        print(f"  to finish: {problem}")
    return EXIT_FAILED if problems else EXIT_OK
