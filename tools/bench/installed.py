"""The installed bench: gymgate as an RL repository gets it (the wheel of this checkout, `uv tool install`, a
tool environment of its own), what that costs once, and a bump of mcqa judged by the installed tool and by
this checkout alternated run by run: their wall times and whether they judge alike (every path's category)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .common import REPO, gymgate, median, table, timed


def _categories(runs: str) -> dict[str, str]:
    """Every path's category in the one compared run of a runs folder."""
    (results,) = [p for p in Path(runs).glob("*/results.json")]
    return {p["path"]: p["category"] for p in json.loads(results.read_text())["paths"]}


def bench_installed(pin: str, baseline: str, repeats: int) -> dict:
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH"
    where = Path(tempfile.mkdtemp(prefix="gg-bench-tool-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GYMGATE_REPO_ROOT")}
    env |= {"UV_TOOL_DIR": str(where / "tools"), "UV_TOOL_BIN_DIR": str(where / "bin")}
    out: dict = {"checkout_s": [], "installed_s": [], "alike": []}
    out["wheel_s"], text, code = timed([uv, "build", "--wheel", "-o", str(where / "dist"), str(REPO)], env)
    assert code == 0, text
    (wheel,) = (where / "dist").glob("*.whl")
    out["wheel_mb"] = round(wheel.stat().st_size / 1e6, 2)
    out["install_s"], text, code = timed([uv, "tool", "install", str(wheel)], env)
    assert code == 0, text
    tool = str(where / "bin" / "gymgate")
    for ref in (pin, baseline):  # both refs' environments, for each, outside the measurement
        for command in ([tool], gymgate()):
            seconds, text, code = timed([*command, "env", "--gym-ref", ref], env)
            assert code == 0, text
    bump = ["accept", "--gym-ref", pin, "--baseline", baseline, "--env", "mcqa", "--no-cache"]
    for _ in range(repeats):
        seen = {}
        for key, command in (("checkout_s", gymgate()), ("installed_s", [tool])):
            runs = tempfile.mkdtemp(prefix="gg-bench-runs-")
            seconds, text, code = timed([*command, *bump, "--runs-dir", runs], env)
            assert code in (0, 1), text
            out[key].append(round(seconds, 3))
            seen[key] = (code, _categories(runs))
            subprocess.run(["rm", "-rf", runs], check=False)
        out["alike"].append(seen["checkout_s"] == seen["installed_s"])
    shutil.rmtree(where, ignore_errors=True)
    return out


def render_installed(pin: str, baseline: str, data: dict, command: str) -> str:
    runs = data["installed"]
    rows = [
        ("`uv build --wheel` of the checkout", [runs["wheel_s"]], "s"),
        ("`uv tool install` of that wheel", [runs["install_s"]], "s"),
        (
            f"`gymgate accept --gym-ref {pin} --baseline {baseline} --env mcqa --no-cache`, this checkout",
            runs["checkout_s"],
            "s",
        ),
        ("the same, gymgate installed as a tool", runs["installed_s"], "s"),
    ]
    ratio = median(runs["installed_s"]) / max(median(runs["checkout_s"]), 1e-3)
    alike = sum(runs["alike"])
    notes = [
        f"The wheel: {runs['wheel_mb']} MB, gymgate's data included. Installed against checkout: ×{ratio:.2f} (median "
        f"wall times, alternated run by run); the same exit code and every path's category in {alike} of "
        f"{len(runs['alike'])} pairs."
    ]
    return table(
        f"installed:{baseline}-to-{pin}", f"Installed as a tool, {baseline} → {pin}", data, command, rows, notes
    )
