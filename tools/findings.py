"""The per-release findings as pictures for the docs: what the benches measured on every release
(docs/benchmarks/*.json), drawn as the reports draw their grids (gymgate.report.grid, templates/grid.svg.j2).

    python -m tools.findings            # rewrite docs/images/findings-*.svg from the committed figures
    python -m tools.findings --check    # exit 1 when a picture is not what the figures draw

tests/unit/test_docs.py checks them, so a bench rerun that changes the figures shows here too."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from gymgate.locations import repo_root
from gymgate.report.grid import BAD, GOOD, PLAIN, WARN, Cell, Grid, share_tone
from gymgate.report.html import templates

FIGURES = repo_root() / "docs" / "benchmarks"
IMAGES = repo_root() / "docs" / "images"


def _pins(name: str, key: str) -> dict:
    return json.loads((FIGURES / name).read_text())[key]["pins"]


def replays() -> Grid:
    """Environments × releases: how many of Gym's own recordings reproduce."""
    pins = _pins("fidelity-every.json", "fidelity_every")
    envs = sorted({env for pin in pins.values() for env in pin["per_env"]})
    grid = Grid(envs, list(pins))
    for pin, found in pins.items():
        for env, said in found["per_env"].items():
            head = said.split(" ", 1)[0]
            if "/" not in head:
                grid.cells[(env, pin)] = Cell(head, PLAIN, said)
                continue
            done, of = (int(n) for n in head.split("/"))
            tone = share_tone(done, of)
            grid.cells[(env, pin)] = Cell(head, tone, said)
    return grid


def faults() -> Grid:
    """Faults × releases: in how many environments Gym handled the fault as a real server's client must."""
    pins = _pins("faults-every.json", "faults")
    names = list(dict.fromkeys(f for pin in pins.values() for f in pin["faults"]))
    grid = Grid([n.removeprefix("fault.") for n in names], list(pins))
    for pin, found in pins.items():
        for name, by_env in found["faults"].items():
            passed = sum(1 for r in by_env.values() if r["outcome"] == "PASS")
            judged = sum(1 for r in by_env.values() if r["outcome"] != "SKIP")
            if not judged:
                continue
            tone = share_tone(passed, judged)
            failed = [
                f"{env}: {r['handled'] or r['outcome']}"
                for env, r in by_env.items()
                if r["outcome"] not in ("PASS", "SKIP")
            ]
            grid.cells[(name.removeprefix("fault."), pin)] = Cell(
                f"{passed}/{judged}", tone, "; ".join(failed) or "every environment"
            )
    return grid


def forms() -> Grid:
    """Forms × releases: how many answers in that form the verifiers get wrong (amber: all known defects)."""
    pins = _pins("variants-every.json", "variants")
    names = list(dict.fromkeys(f for pin in pins.values() for f in pin["forms"]))
    grid = Grid(names, list(pins))
    for pin, found in pins.items():
        for name, by_env in found["forms"].items():
            ran = sum(r["ran"] for r in by_env.values())
            if not ran:
                continue
            wrong = [w for r in by_env.values() for w in r["wrong"]]
            known = sum(r["known"] for r in by_env.values())
            tone = GOOD if not wrong else WARN if known >= len(wrong) else BAD
            text = f"{len(wrong)} wrong" if wrong else f"{ran} right"
            grid.cells[(name, pin)] = Cell(
                text, tone, ", ".join(map(str, wrong)) or f"all {ran} judged as their original"
            )
    return grid


PICTURES: dict[str, tuple[Callable[[], Grid], str]] = {
    "findings-replays.svg": (replays, "recorded rollouts that reproduce, by environment and release"),
    "findings-faults.svg": (faults, "environments handling each fault, by release"),
    "findings-forms.svg": (forms, "answers in each form the verifiers get wrong, by release"),
}


def svg(grid: Grid, label: str) -> str:
    macro = templates().from_string('{% from "grid.svg.j2" import grid_svg %}{{ grid_svg(grid, label) }}')
    return macro.render(grid=grid, label=label).strip() + "\n"


def stale() -> list[str]:
    return [name for name, (grid, label) in PICTURES.items() if _read(IMAGES / name) != svg(grid(), label)]


def _read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.findings", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    if parser.parse_args().check:
        found = stale()
        for name in found:
            print(f"docs/images/{name}: stale; run: python -m tools.findings", file=sys.stderr)
        return 1 if found else 0
    for name, (grid, label) in PICTURES.items():
        (IMAGES / name).write_text(svg(grid(), label))
        print(IMAGES / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
