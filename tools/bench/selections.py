"""Benches of the path selections per release: what each fault does on every release (faults) and which forms each
release's verifiers get wrong (variants), then what each option's default set costs the newest pin."""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile

from gymgate.outcomes import SKIP
from gymgate.pathid import PathId
from gymgate.report.variants import disagreements

from .common import gymgate, one_run, timed

FAULT_DEADLINE_S = "15"  # the faults bench's --path-timeout: what a fault that hangs a release costs per path


def bench_faults(pins: list[str], repeats: int) -> dict:
    """What each fault does on each release (`accept --faults all --no-baseline`, the default set's environments,
    their case and fault paths): per fault, how Gym handled it in each environment, how many attempts of the failed
    call the endpoint saw, and the path's outcome. Then what the default faults cost the default set on the newest
    pin: `--faults none` against `--faults default`, alternated, `repeats` times each."""
    from gymgate.faults.catalogue import catalogue

    names = [f.path_name for f in catalogue().faults]
    # GYMGATE_ENVS narrows every run to those environments (mcqa, workplace_assistant and equivalence_llm_judge
    # reach every call of the matrix: the first, a later turn's, the judge's); kept with the figures.
    out: dict = {"pins": {}, "cost": {}, "envs": os.environ.get("GYMGATE_ENVS", "")}
    for pin in pins:
        runs = tempfile.mkdtemp(prefix="gg-bench-faults-")
        args = ["accept", "--gym-ref", pin, "--faults", "all", "--no-baseline", "--no-cache", "--no-replays"]
        argv = gymgate(*args, "--path-timeout", FAULT_DEADLINE_S, "--runs-dir", runs)
        seconds, text, code = timed(argv, dict(os.environ))
        assert code in (0, 1), text
        rows: dict = {}
        for record in one_run(runs).records().values():
            if record.mode not in names:
                continue
            fault = record.section("fault")
            seen = rows.setdefault(record.mode, {})
            seen[record.env] = {
                "outcome": str(record.outcome),
                "handled": fault.get("handled", ""),
                "attempts": fault.get("attempts"),
                "reason": record.reason[:200],
            }
        out["pins"][pin] = {"exit_code": code, "wall_s": round(seconds, 1), "faults": rows}
        subprocess.run(["rm", "-rf", runs], check=False)
    out["cost"], out["cost_pin"] = _selection_cost(pins[-1], "--faults", repeats), pins[-1]
    return out


def _selection_cost(pin: str, option: str, repeats: int) -> dict:
    """What a selection option's default set costs the default set of `pin` (warm, `--no-baseline`): `none`
    against `default`, alternated `repeats` times, each run's wall time and path count."""
    cost: dict = {}
    for _ in range(repeats):
        for selection in ("none", "default"):
            runs = tempfile.mkdtemp(prefix="gg-bench-cost-")
            args = ["accept", "--gym-ref", pin, "--no-baseline", "--no-cache", option, selection, "--runs-dir", runs]
            seconds, text, code = timed(gymgate(*args), dict(os.environ))
            assert code == 0, text
            paths = len(one_run(runs).records())
            cost.setdefault(selection, []).append({"wall_s": round(seconds, 1), "paths": paths})
            subprocess.run(["rm", "-rf", runs], check=False)
    return cost


def _cost_line(cost: dict, pin: str, what: str, option: str) -> list[str]:
    """The cost of a selection's default set as report lines (none when it was not measured)."""
    if not cost:
        return []
    none = [r["wall_s"] for r in cost["none"]]
    default = [r["wall_s"] for r in cost["default"]]
    return [
        "",
        f"What the default {what} cost the default set (nemo-gym {pin}, warm, `--no-baseline`, alternated): "
        f"`{option} none` {cost['none'][0]['paths']} paths, median {statistics.median(none):.1f} s "
        f"({', '.join(map(str, none))}); `{option} default` {cost['default'][0]['paths']} paths, median "
        f"{statistics.median(default):.1f} s ({', '.join(map(str, default))}): "
        f"×{statistics.median(default) / statistics.median(none):.2f}.",
    ]


def _fault_cell(per_env: dict) -> str:
    """One release's handling of one fault over the environments it applies to (a SKIP: not in that release): the
    handling most of them share, with its attempts, then each environment that differs, named."""
    kinds: dict[str, list[str]] = {}
    for env, seen in sorted(per_env.items()):
        if seen["outcome"] == SKIP:
            continue
        how = seen["handled"] or seen["outcome"]
        how += f" ({seen['attempts']})" if seen["attempts"] is not None else ""
        if seen["outcome"] != "PASS":
            how += f" — **{seen['outcome']}**"
        kinds.setdefault(how, []).append(env)
    if not kinds:
        return "—"
    ordered = sorted(kinds.items(), key=lambda item: -len(item[1]))
    return "; ".join([ordered[0][0], *(f"{', '.join(envs)}: {how}" for how, envs in ordered[1:])])


def render_faults(data: dict, command: str) -> str:
    from gymgate.faults.catalogue import catalogue

    faults = catalogue().faults
    pins = list(data["faults"]["pins"])
    envs = data["faults"].get("envs", "")
    scope = f"`{envs}` (`GYMGATE_ENVS`)" if envs else "the default set's"
    lines = [
        "<!-- faults:every:begin -->",
        "### What each fault does, per release",
        "",
        f"Command: `{'GYMGATE_ENVS=' + envs + ' ' if envs else ''}{command}` — {data['host']}, {data['when']}. "
        f"Each release's fault paths in {scope} environments, `--faults all`: every cell of the matrix that runs "
        f"(docs/reference/faults.md), one run each (`--path-timeout {FAULT_DEADLINE_S}`). A cell: how Gym handled the fault (absorbed: it tried "
        "again and the path passed every check of the accepted case; reported in the row: the row came back "
        "with a failure marker; reported by /run: /run answered an error status), and in brackets the attempts of "
        "the failed call the endpoint saw. **FAIL** marks a rule broken (acceptance/faulted.py).",
        "",
        "| fault | " + " | ".join(pins) + " |",
        "|---|" + "---|" * len(pins),
    ]
    for fault in faults:
        cells = []
        for pin in pins:
            per_env = data["faults"]["pins"][pin]["faults"].get(fault.path_name, {})
            cells.append(_fault_cell(per_env) if per_env else "—")
        lines.append(f"| `{fault.name}` | " + " | ".join(cells) + " |")
    walls = ", ".join(f"{p} {v['wall_s']} s (exit {v['exit_code']})" for p, v in data["faults"]["pins"].items())
    lines += ["", f"Runs (`--faults all`, `--path-timeout {FAULT_DEADLINE_S}`): {walls}."]
    lines += _cost_line(data["faults"].get("cost"), data["faults"].get("cost_pin"), "faults", "--faults")
    lines.append("<!-- faults:every:end -->")
    return "\n".join(lines)


def bench_variants(pins: list[str], repeats: int, env_set: str = "default", every_env: bool = False) -> dict:
    """Which forms each release's verifiers get wrong (`accept --variants all --no-baseline`, the default set's
    environments, their cases and recordings): per form and environment, how many variant paths ran and which
    disagreed with their original (reviewed known defects among them). Then what the default forms cost the
    default set on the newest pin: `--variants none` against `--variants default`, alternated, `repeats` times.
    `env_set`: another set's environments instead (every form, no cost runs); `every_env`: every runnable
    environment instead (`--env-set all`), the default forms only, no cost runs."""
    out: dict = {"pins": {}, "cost": {}, "every_env": every_env, "env_set": env_set}
    selection = (
        ["--env-set", "all", "--variants", "default", "--faults", "none"]
        if every_env
        else ["--env-set", env_set, "--variants", "all"]
    )
    for pin in pins:
        runs = tempfile.mkdtemp(prefix="gg-bench-variants-")
        args = ["accept", "--gym-ref", pin, *selection, "--no-baseline", "--no-cache", "--runs-dir", runs]
        seconds, text, code = timed(gymgate(*args), dict(os.environ))
        assert code in (0, 1), text
        forms: dict = {}
        ran = [r for r in one_run(runs).records().values() if PathId(r.path).part("form") and r.outcome != SKIP]
        wrong = disagreements(ran)
        for record in ran:
            seen = forms.setdefault(PathId(record.path).part("form"), {}).setdefault(
                record.env, {"ran": 0, "wrong": [], "known": 0, "unjudged": 0}
            )
            seen["ran"] += 1
            if record.path in wrong:
                seen["wrong"].append(record.mode)
                seen["known"] += 1 if wrong[record.path].known else 0
            elif record.section("variant").get("agrees") is not True:
                seen["unjudged"] += 1  # no verdict against its original (an ERROR): neither right nor wrong
        out["pins"][pin] = {"exit_code": code, "wall_s": round(seconds, 1), "forms": forms}
        subprocess.run(["rm", "-rf", runs], check=False)
    if not every_env and env_set == "default":
        out["cost"], out["cost_pin"] = _selection_cost(pins[-1], "--variants", repeats), pins[-1]
    return out


def _variant_cell(per_env: dict) -> str:
    """One release's verdicts on one form: how many of its variants ran, the environments whose verifier got some
    wrong (how many; how many of those a reviewed entry knows), and how many could not be judged."""
    ran = sum(seen["ran"] for seen in per_env.values())
    wrong = {env: seen for env, seen in sorted(per_env.items()) if seen["wrong"]}
    unjudged = sum(seen.get("unjudged", 0) for seen in per_env.values())
    tail = f"; {unjudged} not judged" if unjudged else ""
    if not ran:
        return "—"
    if not wrong:
        return f"{ran - unjudged} right{tail}"
    named = ", ".join(f"{env} {len(seen['wrong'])}/{seen['ran']}" for env, seen in wrong.items())
    known = sum(seen.get("known", 0) for seen in wrong.values())
    count = sum(len(s["wrong"]) for s in wrong.values())
    return f"**{count} of {ran} wrong**{f' ({known} known)' if known else ''}: {named}{tail}"


def render_variants(data: dict, command: str) -> str:
    from gymgate.variants.forms import catalogue

    pins = list(data["variants"]["pins"])
    env_set = data["variants"].get("env_set", "default")
    tag, scope, title = (
        (
            "every-env",
            "every runnable environment (`--env-set all`), their hand-written answers and "
            "the recordings that release ships, the default forms (`--variants default`)",
            ", every runnable environment",
        )
        if data["variants"].get("every_env")
        else (
            "every" + ("" if env_set == "default" else f"-{env_set}"),
            f"{env_set}-set environments, their hand-written answers and the recordings that release ships, "
            "every form of gymgate/variants/forms.toml (`--variants all`)",
            "" if env_set == "default" else f", the `{env_set}` set",
        )
    )
    lines = [
        f"<!-- variants:{tag}:begin -->",
        "### Forms the verifiers get wrong, per release" + title,
        "",
        f"Command: `{command}` — {data['host']}, {data['when']}. Each release's {scope}, one run each. A cell: how "
        "many variant paths of that form ran and, where a verifier came to another verdict than on the original "
        "answer, how many and in which environment (wrong/ran).",
        "",
        "| form | " + " | ".join(pins) + " |",
        "|---|" + "---|" * len(pins),
    ]
    for form in catalogue()[0]:
        cells = [_variant_cell(data["variants"]["pins"][pin]["forms"].get(form.name, {})) for pin in pins]
        if any(c != "—" for c in cells):
            lines.append(f"| `{form.name}` | " + " | ".join(cells) + " |")
    walls = ", ".join(f"{p} {v['wall_s']} s (exit {v['exit_code']})" for p, v in data["variants"]["pins"].items())
    lines += ["", f"Runs: {walls}."]
    lines += _cost_line(data["variants"].get("cost"), data["variants"].get("cost_pin"), "forms", "--variants")
    lines.append(f"<!-- variants:{tag}:end -->")
    return "\n".join(lines)
