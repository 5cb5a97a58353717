"""accept with a baseline, through the real CLI: the baseline runs (or is reused when none of its inputs
changed), the candidate runs, and the comparison decides the exit code and writes every report file. The bump is
the real 0.3.0 -> 0.4.0, whose contract changes are reviewed in acks/0.3.0-to-0.4.0.toml."""

from __future__ import annotations

import json
import subprocess
import sys


def _accept(runs, *extra):
    args = [
        sys.executable,
        "-m",
        "gymgate",
        "accept",
        "--gym-ref",
        "0.4.0",
        "--baseline",
        "0.3.0",
        "--env",
        "mcqa",
        "-n",
        "1",
        "--runs-dir",
        str(runs),
        *extra,
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=900)


def test_baseline_then_candidate_then_report_then_cached(tmp_path):
    first = _accept(tmp_path)
    out = first.stdout + first.stderr
    assert first.returncode == 0, out
    assert "== baseline 0.3.0" in out and "== candidate 0.4.0" in out
    assert "Verdict: no regression (7 paths pass on both: 7 with reviewed changes)." in " ".join(out.split())
    runs = sorted(tmp_path.iterdir())
    assert len(runs) == 2
    (candidate,) = [r for r in runs if "-0.4.0-" in r.name]
    for name in ("report.md", "report.html", "results.json", "junit.xml", "retry.txt"):
        assert (candidate / name).is_file(), name
    report = (candidate / "report.md").read_text()
    assert "- **nemo-gym**: 0.3.0 → 0.4.0" in report
    # 0.4.0 sends top_logprobs: 0 (0.3.0 did not): a contract change, reviewed in the committed acks.
    acked = "- `requests.policy.*.body.top_logprobs` new in 0.4.0: `0` (RL trains on it) — all 7 paths: **"
    assert "### Acknowledged changes" in report and acked in report, report
    assert "(acks/0.3.0-to-0.4.0.toml change " in report
    results = json.loads((candidate / "results.json").read_text())
    assert results["provenance"]["baseline"]["version"] == "0.3.0"
    assert results["acknowledgements"]["refused"] == []
    assert (candidate / "retry.txt").read_text() == ""

    second = _accept(tmp_path)
    out = second.stdout + second.stderr
    assert second.returncode == 0, out
    # Both refs are served from the cache (none of their inputs changed, both runs clean); nothing runs, the
    # comparison is made again and says the same.
    assert out.count("cached: ") == 2 and "none of its inputs changed" in out
    assert len(list(tmp_path.iterdir())) == 2
    assert "Verdict: no regression (7 paths pass on both: 7 with reviewed changes)." in " ".join(out.split())
