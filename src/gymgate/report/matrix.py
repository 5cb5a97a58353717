"""The matrix report: a refs × paths table (outcome and reward), then each neighbouring bump as `accept` reports it.

matrix.md for reading in a terminal or a PR; matrix.html as one self-contained page where every cell is coloured by
its outcome and links to that path's detail on that ref.
"""

from __future__ import annotations

import html
from pathlib import Path

from gymgate.atomic import write_text_atomic
from gymgate.outcomes import BROKEN, ERROR, FAIL, PASS, SKIP
from gymgate.refs.source import nemo_gym_label
from gymgate.results import Matrix, MatrixRef
from gymgate.runfolder import PathRecord
from gymgate.text import reward_text

CELL_COLOUR = {PASS: "#cfc", FAIL: "#f99", ERROR: "#fc9", SKIP: "#eee", BROKEN: "#c66"}


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


def render_matrix_markdown(matrix: Matrix) -> str:
    refs = matrix.refs
    lines = [f"## gymgate matrix: {' → '.join(r.asked for r in refs)}", "", f"**Verdict: {_verdict(matrix)}**", ""]
    lines += ["### Refs", ""] + [f"- {_ref_title(r)}: `{r.run.dir}`" for r in refs] + [""]
    lines += ["### Paths", "", "| path | " + " | ".join(r.asked for r in refs) + " |"]
    lines.append("|---|" + "---|" * len(refs))
    for path in matrix.paths:
        lines.append(f"| `{path}` | " + " | ".join(_cell(r.records.get(path)) for r in refs) + " |")
    lines.append("")
    for bump in matrix.bumps:
        text = bump.report
        body = text.split("\n", 1)[1] if text.startswith("## ") else text  # its own title is the heading below
        lines += [f"### Bump {bump.baseline.asked} → {bump.candidate.asked}", "", f"(full report: `{bump.out}`)", ""]
        lines += [line.replace("### ", "#### ", 1) if line.startswith("### ") else line for line in body.splitlines()]
        lines.append("")
    return "\n".join(lines) + "\n"


def _anchor(column: int, path: str) -> str:
    return f"r{column}-" + "".join(c if c.isalnum() else "-" for c in path)


def write_matrix_html(matrix: Matrix, markdown_text: str, directory: Path) -> Path:
    """One page, no external assets: the coloured table, each cell linking to that path's detail on that ref."""
    refs = matrix.refs
    head = "".join(f"<th>{html.escape(r.asked)}</th>" for r in refs)
    rows = []
    for path in matrix.paths:
        cells = []
        for column, ref in enumerate(refs):
            record = ref.records.get(path)
            colour = CELL_COLOUR.get(record.outcome, "#fff") if record else "#fff"
            text = html.escape(_cell(record))
            cells.append(
                f"<td style='background:{colour}'><a href='#{_anchor(column, path)}'>{text}</a></td>"
                if record
                else f"<td>{text}</td>"
            )
        rows.append(f"<tr><td><code>{html.escape(path)}</code></td>{''.join(cells)}</tr>")
    details = []
    for column, ref in enumerate(refs):
        details.append(f"<h3>{html.escape(_ref_title(ref))}</h3><p><code>{html.escape(str(ref.run.dir))}</code></p>")
        for path in matrix.paths:
            record = ref.records.get(path)
            if record is None:
                continue
            failures = "".join(f"<li>{html.escape(f.line())}</li>" for f in record.failures)
            details.append(
                f"<div id='{_anchor(column, path)}' class='detail'><b>{html.escape(path)}</b> on "
                f"{html.escape(ref.asked)}: {html.escape(_cell(record))}"
                + (f" ({html.escape(record.blame)})" if record.blame else "")
                + (f"<pre>{html.escape(record.reason)}</pre>" if record.reason else "")
                + (f"<ul>{failures}</ul>" if failures else "")
                + "</div>"
            )
    bumps = "".join(
        f"<li><a href='{html.escape(str(b.out / 'report.html'))}'>{html.escape(b.baseline.asked)} → "
        f"{html.escape(b.candidate.asked)}</a>: {html.escape(b.comparison.verdict)}</li>"
        for b in matrix.bumps
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>gymgate matrix</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:.3em .6em}}td a{{color:inherit;text-decoration:none;display:block}}.detail{{margin:.4em 0}}
pre{{background:#f6f6f6;padding:.6em;white-space:pre-wrap}}</style></head><body>
<h1>{html.escape(_verdict(matrix))}</h1>
<table><tr><th>path</th>{head}</tr>{"".join(rows)}</table>
<h2>Bumps</h2><ul>{bumps}</ul>
<h2>Path detail</h2>{"".join(details)}
<h2>Full report</h2><pre>{html.escape(markdown_text)}</pre></body></html>"""
    return write_text_atomic(directory / "matrix.html", page)


def write_matrix_reports(matrix: Matrix, directory: Path) -> list[Path]:
    text = render_matrix_markdown(matrix)
    return [write_text_atomic(directory / "matrix.md", text), write_matrix_html(matrix, text, directory)]
