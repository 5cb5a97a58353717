"""`gymgate cases list`: which environments of a Gym have example data, a case, and can run here (cases/catalog.py),
and what the ones that run here exercise (gymgate.coverage)."""

from __future__ import annotations

import json
from pathlib import Path

from gymgate import coverage
from gymgate.cases.catalog import catalog
from gymgate.cases.derived import runnable_here
from gymgate.cases.environments import Environment, all_environments
from gymgate.errors import EXIT_OK
from gymgate.kinds.plan import plan_refs
from gymgate.paths.spec import PathSpec
from gymgate.refs.distribution import Distribution
from gymgate.selection import ALL
from gymgate.variants.forms import FENCE


def list_command(gym_ref: str, gym_repo: str | None, list_json: bool, runs_dir: Path | None) -> int:
    """`gymgate cases list`: which environments of a Gym have example data, a case, and can run here."""
    from gymgate.refs import resolve_ref  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.report.fidelity import measured  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)
    from gymgate.runfolder import runs_dir as default_runs_dir  # noqa: PLC0415 - CLI start-up: loaded once the command gets this far (bad input is refused first)

    source = resolve_ref(gym_ref, gym_repo)
    found = catalog(Distribution(source))
    exercises = exercised(source)
    if list_json:
        items = [
            e.to_json() | ({"exercises": exercises[e.name].to_json()} if e.name in exercises else {}) for e in found
        ]
        # A case that runs a server another way (math_with_judge_judge_on) is no server of the Gym's own.
        others = {name: c.to_json() for name, c in exercises.items() if name not in {e.name for e in found}}
        print(json.dumps({"gym": source.to_json(), "environments": items, "other_cases": others}, indent=2))
        return EXIT_OK
    with_data = [e for e in found if e.examples]
    covered = [e for e in found if e.cases]
    runnable = [e for e in found if e.runnable and not e.cases]
    print(
        f"Gym {source.name} ({source.describe()}): {len(found)} environments, {len(with_data)} with example data, "
        f"{len(covered)} with a case, {len(runnable)} more with nothing declared against running here"
    )
    width = max(len(e.name) for e in found) if found else 10
    run, replayed = measured(runs_dir or default_runs_dir(), source.digest)
    print(f"{'environment':<{width}}  {'rows':>4}  {'recorded':>8}  {'reproduce':>9}  {'case':<24}  runs here")
    for item in found:
        rows = sum(item.examples.values())
        recorded = f"{item.replayable}/{item.recordings}" if item.recordings else "—"
        ran = [replayed[c] for c in item.cases or [item.name] if c in replayed]  # no case: run as derived
        reproduce = ", ".join(f"{f.reproduce}/{f.replays}" for f in ran) or "—"
        why_not = "; ".join(item.blockers) if not item.runnable else item.unjudgeable
        here = f"no: {why_not}" if why_not else "yes: nothing declared against it"
        notes = f" ({'; '.join(item.notes)})" if item.notes and item.runnable else ""
        cases = ", ".join(item.cases) or "—"
        print(f"{item.name:<{width}}  {rows or '—':>4}  {recorded:>8}  {reproduce:>9}  {cases:<24}  {here}{notes}")
    print(
        "recorded: rollouts Gym recorded against real models that gymgate can replay here (their row is shipped) / all"
    )
    print(
        f"reproduce: replays that reproduced their recording / replayed, in {run.root}"
        if run
        else "reproduce: no stored run of this ref yet (`gymgate accept --gym-ref REF --no-baseline` measures it)"
    )
    print()
    for line in coverage_lines(exercises):
        print(line)
    return EXIT_OK


def exercised(source) -> dict:
    """What each environment that runs here exercises, by family (gymgate.coverage): its paths planned with
    every form and every fault (`--variants all --faults all`) on this ref, by environment (a derived one is named
    for its resources server)."""
    cases = [e for e in all_environments() if not e.draft]
    derived, _ = runnable_here(Distribution(source), {e.name for e in cases})
    envs = cases + derived
    paths, _ = plan_refs(envs, [source], {"fault": ALL, "variant": ALL})
    return {env.name: planned(env, [p for p in paths if p.id.env == env.name]) for env in envs}


def coverage_lines(covered: dict) -> list[str]:
    """Per family: how many environments it exercises, and those it does not, grouped by why."""
    lines = [
        f"What the {len(covered)} environments that run here exercise (every form, every fault: "
        "`--variants all --faults all`; docs/reference/forms.md, faults.md):"
    ]
    for family in coverage.family_names():
        having = [c for c in covered.values() if c.counts.get(family)]
        paths = sum(c.counts[family] for c in having)
        lines.append(f"  {family}: {len(having)} environments, {paths} paths")
        why: dict[str, list[str]] = {}
        for item in covered.values():
            if family in item.why_not:
                why.setdefault(item.why_not[family], []).append(item.env)
        for reason, names in sorted(why.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(names[:6]) + (f", and {len(names) - 6} more" if len(names) > 6 else "")
            lines.append(f"    not {len(names)}: {reason} ({shown})")
    return lines


def planned(env: Environment, paths: list[PathSpec]) -> coverage.Coverage:
    """The coverage of an environment's planned paths, with why each family it does not exercise has none."""
    found = coverage.count(env.name, (str(p.id) for p in paths))
    originals = [p for p in paths if p.of is None and not p.cannot_run]
    scripts = [p.script for p in originals]
    accepted = next((p.script for p in originals if p.name == "accepted"), None)
    judged = any(s.judge_verdicts for s in scripts)
    programs = any(FENCE.search(t.content) for s in scripts for t in s.turns)  # a block a code form would rewrite
    reasons = {
        "programs": (
            "its code blocks neither read input nor print (functions, patches or data): no program form rewrites them"
            if programs
            else "no answer holds a program"
        ),
        "judge replies": "" if judged else "no judge reply: no case verdict, no recorded judge",
        "tool sessions": "no case" if not env.has_case else "no [session] table in its case",
    }
    if accepted is None:  # a fault path fails a call of the hand-written accepted answer
        reasons |= {
            f"{coverage.FAULTS}: {c}": "fault paths fail a case's calls: no case"
            for c in ("first call", "later turn", "judge")
        }
    else:
        reasons[f"{coverage.FAULTS}: later turn"] = "its accepted answer is one turn" if len(accepted.turns) < 2 else ""
        reasons[f"{coverage.FAULTS}: judge"] = "" if accepted.judge_verdicts else "its accepted answer asks no judge"
    if not originals:
        reasons = dict.fromkeys(found.counts, "no path that runs here")
    for family, n in found.counts.items():
        if not n:
            found.why_not[family] = reasons.get(family) or (
                "no fault path of this call selected"
                if family.startswith(coverage.FAULTS)
                else "no form of it fits an answer"
            )
    return found
