"""The matrix report: which environments pass on which release (a grid), each neighbouring bump's verdict with a
link to its full report, and every path on every ref for whoever wants them.

matrix.md for reading in a terminal or a PR (the bumps' own reports are linked, not repeated); matrix.html as one
self-contained page (templates/matrix.html.j2): the grid as a picture, every path cell linking to that path's
detail on that ref.
"""

from __future__ import annotations

from pathlib import Path

from gymgate.atomic import write_text_atomic
from gymgate.errors import EXIT_FAILED, EXIT_OK
from gymgate.outcomes import BROKEN, ERROR, FAIL, PASS, SKIP
from gymgate.refs.source import nemo_gym_label
from gymgate.report.grid import BAD, GOOD, PLAIN, WARN, matrix_grid
from gymgate.report.html import banner, templates
from gymgate.results import Matrix, MatrixRef
from gymgate.runfolder import PathRecord
from gymgate.text import reward_text
from gymgate.verdict import combined_exit

OUTCOME_TONE = {PASS: GOOD, FAIL: BAD, ERROR: WARN, SKIP: PLAIN, BROKEN: BAD}


def _cell(record: PathRecord | None) -> str:
    if record is None:
        return "—"
    reward = f" {reward_text(record.reward)}" if record.reward is not None else ""
    return f"{record.outcome}{reward}"


def _ref_title(ref: MatrixRef) -> str:
    info = ref.source.to_json()
    label = nemo_gym_label(info) or ref.source.version
    cached = ", cached" if ref.run.cached else ""
    return f"{ref.asked} (nemo-gym {label}{cached})"


def _verdict(matrix: Matrix) -> str:
    if not matrix.bumps:
        return f"one ref, no bump to judge: {matrix.refs[0].asked}" if matrix.refs else "no refs"
    last = matrix.bumps[-1]
    return f"{last.baseline.asked} → {last.candidate.asked}: {last.comparison.verdict}"


def _bump_verdict(bump) -> str:
    """A bump's verdict, and its verdict on Gym's own tests when they ran (`--gym-tests`)."""
    if bump.gym_tests_code is None:
        return bump.comparison.verdict
    return f"{bump.comparison.verdict}; {bump.gym_tests_verdict}"


def _bump_code(bump) -> int:
    code = bump.comparison.exit_code
    return code if bump.gym_tests_code is None else combined_exit(code, bump.gym_tests_code)


def render_matrix_markdown(matrix: Matrix) -> str:
    refs = matrix.refs
    lines = [f"## gymgate matrix: {' → '.join(r.asked for r in refs)}", "", f"**Verdict: {_verdict(matrix)}**", ""]
    lines += ["### Refs", ""] + [f"- {_ref_title(r)}: `{r.run.dir}`" for r in refs] + [""]
    if matrix.bumps:
        lines += ["### Each bump", "", "| bump | verdict | report |", "|---|---|---|"]
        for bump in matrix.bumps:
            name = f"{bump.baseline.asked} → {bump.candidate.asked}"
            lines.append(f"| {name} | {_bump_verdict(bump)} | `{bump.out / 'report.md'}` |")
        lines.append("")
    grid = matrix_grid(matrix)
    lines += ["### Environments × releases (paths passing)", "", "| environment | " + " | ".join(grid.columns) + " |"]
    lines.append("|---|" + "---|" * len(grid.columns))
    for env in grid.rows:
        lines.append(f"| {env} | " + " | ".join(grid.cell(env, c).text or "—" for c in grid.columns) + " |")
    lines += ["", "<details><summary>every path on every ref</summary>", ""]
    lines += ["| path | " + " | ".join(r.asked for r in refs) + " |", "|---|" + "---|" * len(refs)]
    for path in matrix.paths:
        lines.append(f"| `{path}` | " + " | ".join(_cell(r.records.get(path)) for r in refs) + " |")
    return "\n".join([*lines, "", "</details>", ""])


def _anchor(column: int, path: str) -> str:
    return f"r{column}-" + "".join(c if c.isalnum() else "-" for c in path)


def _ref_view(column: int, ref: MatrixRef, paths: list[str]) -> dict:
    cells, details = {}, []
    for path in paths:
        record = ref.records.get(path)
        if record is None:
            cells[path] = None
            continue
        anchor = _anchor(column, path)
        cells[path] = {"text": _cell(record), "tone": OUTCOME_TONE.get(record.outcome, PLAIN), "anchor": anchor}
        details.append(
            {
                "anchor": anchor,
                "path": path,
                "text": _cell(record),
                "blame": record.blame,
                "reason": record.reason,
                "failures": [f.line() for f in record.failures],
            }
        )
    return {"asked": ref.asked, "title": _ref_title(ref), "dir": str(ref.run.dir), "cells": cells, "details": details}


def write_matrix_html(matrix: Matrix, directory: Path) -> Path:
    """One page, no external assets: the verdict, each bump, the environments × releases grid, every path."""
    bumps = [
        {
            "baseline": b.baseline.asked,
            "candidate": b.candidate.asked,
            "verdict": _bump_verdict(b),
            "tone": {EXIT_OK: GOOD, EXIT_FAILED: BAD}.get(_bump_code(b), WARN),
            "report": str(b.out / "report.html"),
        }
        for b in matrix.bumps
    ]
    page = (
        templates()
        .get_template("matrix.html.j2")
        .render(
            **banner(matrix.exit_code),
            verdict=_verdict(matrix),
            exit_code=matrix.exit_code,
            refs=[_ref_view(column, ref, matrix.paths) for column, ref in enumerate(matrix.refs)],
            paths=matrix.paths,
            bumps=bumps,
            grid=matrix_grid(matrix),
        )
    )
    return write_text_atomic(directory / "matrix.html", page)


def write_matrix_reports(matrix: Matrix, directory: Path) -> list[Path]:
    return [
        write_text_atomic(directory / "matrix.md", render_matrix_markdown(matrix)),
        write_matrix_html(matrix, directory),
    ]
