"""The pin matrix over stored runs (the runs themselves are faked: run_refs is tested on real Gyms elsewhere)."""

from __future__ import annotations

import re

import pytest

from gymgate.errors import UsageError
from gymgate.harness import executor, matrix
from gymgate.harness.run_options import RunOptions
from gymgate.refs import resolve_ref
from gymgate.report.matrix import write_matrix_reports
from gymgate.results import RunResult
from tests.helpers import record, stored_run

PATHS = ["mcqa:accepted", "mcqa:rejected"]
OUTCOMES = {"0.2.1": ("PASS", "PASS"), "0.3.0": ("PASS", "FAIL"), "0.4.0": ("PASS", "PASS")}


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """A stored run per pin; run_refs serves them (as the cache would)."""
    runs = {}
    for pin, outcomes in OUTCOMES.items():
        made = [
            record(p, o, reason="[reward] reward: expected 0.0, got 1.0" if o == "FAIL" else "")
            for p, o in zip(PATHS, outcomes, strict=True)
        ]
        runs[pin] = stored_run(tmp_path / "runs", pin, pin, made, expected=PATHS)

    def served(source, expected, opts, reuse=False, **_):
        assert reuse and expected == PATHS
        return RunResult(runs[source.name], 0, cached=True)

    monkeypatch.setattr(
        executor, "run_refs", lambda calls: [served(c.source, c.expected, c.opts, c.reuse) for c in calls]
    )
    return runs


def _matrix(pins, tmp_path):
    refs = [(pin, resolve_ref(pin)) for pin in pins]
    return matrix.run_matrix(refs, PATHS, RunOptions(), tmp_path / "out")


def test_the_last_bump_decides_and_every_bump_is_reported(stored, tmp_path):
    matrix = _matrix(["0.2.1", "0.3.0", "0.4.0"], tmp_path)
    verdicts = [b.comparison.exit_code for b in matrix.bumps]
    assert verdicts == [1, 0]  # 0.2.1 → 0.3.0 regresses mcqa:rejected; 0.3.0 → 0.4.0 fixes it
    assert matrix.exit_code == 0
    assert all((b.out / name).is_file() for b in matrix.bumps for name in ("report.md", "results.json", "junit.xml"))
    md, page = (p.read_text() for p in write_matrix_reports(matrix, tmp_path / "out"))
    assert "| `mcqa:rejected` | PASS 0.0 | FAIL 0.0 | PASS 0.0 |" in md
    # Each bump's verdict with its report, the environments × releases grid, then every path.
    assert "| 0.2.1 → 0.3.0 | 1 regressed, 0 broken |" in md and "/report.md` |" in md
    assert "| mcqa | 2/2 | 1/2 | 2/2 |" in md
    assert "**Verdict: 0.3.0 → 0.4.0: no regression" in md
    # The page: the grid as a picture (each cell's tone and counts), every path cell linking to its detail.
    tones = dict(re.findall(r'<g data-row="mcqa" data-column="([^"]+)" data-tone="([a-z]*)">', page))
    assert tones == {"0.2.1": "good", "0.3.0": "warn", "0.4.0": "good"}
    links = re.findall(r'<td class="cell (\w+)"><a href="#([^"]+)">([^<]+)</a></td>', page)
    assert len(links) == 6 and ("bad", "r1-mcqa-rejected", "FAIL 0.0") in links
    for _, anchor, _ in links:
        assert f'<div id="{anchor}" class="detail">' in page
    assert "[reward] reward: expected 0.0, got 1.0" in page


def test_a_regressing_last_bump_fails_the_matrix(stored, tmp_path):
    assert _matrix(["0.4.0", "0.2.1", "0.3.0"], tmp_path).exit_code == 1
    assert _matrix(["0.4.0"], tmp_path).exit_code == 0  # one ref: no bump to judge
    with pytest.raises(UsageError, match="names the same Gym twice"):
        _matrix(["0.4.0", "0.4.0"], tmp_path)


def test_a_matrix_of_one_broken_ref_fails(stored, tmp_path, monkeypatch):
    """One ref is judged alone, like `accept --no-baseline`: a ref that cannot even be built is 1, never 0."""
    broken = RunResult(stored["0.4.0"], 1, broken="build: requires Python >=3.13.14")
    monkeypatch.setattr(executor, "run_refs", lambda calls: [broken for _ in calls])
    assert _matrix(["0.4.0"], tmp_path).exit_code == 1


def test_matrix_json_names_every_bump_and_ref(stored, tmp_path, capfd):
    """`matrix --json`: the verdict for machines, each bump's verdict and exit code, each ref's run, the schema."""
    from gymgate import streams

    result = _matrix(["0.2.1", "0.3.0", "0.4.0"], tmp_path)
    document = matrix.matrix_document(result, write_matrix_reports(result, tmp_path / "out"))
    capfd.readouterr()  # the runs' progress
    with streams.split(json=True):
        streams.write_document(document)
    import json

    printed = json.loads(capfd.readouterr().out)
    assert printed["schema"] == streams.SCHEMA and printed["kind"] == "matrix" and printed["exit_code"] == 0
    assert [(b["baseline"], b["candidate"], b["exit_code"]) for b in printed["bumps"]] == [
        ("0.2.1", "0.3.0", 1),
        ("0.3.0", "0.4.0", 0),
    ]
    assert [r["ref"] for r in printed["refs"]] == ["0.2.1", "0.3.0", "0.4.0"]
