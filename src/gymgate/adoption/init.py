"""`gymgate init`: what an RL repository keeps of gymgate, written once into it — its settings (gymgate.toml: the
baseline it runs today, the environments it trains on, where its own reviews and cases live, which RL its verdicts
speak for), the folders for those reviews and cases, and the CI workflow that gates its Gym bumps (the example
workflow, installing gymgate as a tool from where this one came from). Nothing that exists is overwritten."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from gymgate.errors import EXIT_OK, UsageError
from gymgate.locations import repo_root
from gymgate.options import config
from gymgate.refs.lockref import gym_ref_of_lock
from gymgate.refs.pins import baseline_pin
from gymgate.rl.profile import default_name

ACKS, CASES = "gymgate/acks", "gymgate/cases"
WORKFLOW = Path(".github") / "workflows" / "gymgate.yml"
EXAMPLE = Path("examples") / "github-actions" / "gymgate.yml"
PLACEHOLDER = "git+https://github.com/your-org/gymgate@main"  # the example's GYMGATE_FROM
RUNS = ".gymgate/"  # an installed gymgate's run folders and what it lays out (locations, options.config)

SETTINGS = """\
# gymgate's settings for this repository. A key is a gymgate option's flag without its dashes; the flag, or its
# GYMGATE_* variable, overrides it. `gymgate config` shows what applies and where each value came from.

# The Gym this repository runs today: what a bump is judged against (CI reads it from the base commit's uv.lock).
baseline = "{baseline}"
# The environments your RL trains on: a set gymgate names (`gymgate cases list --gym-ref {baseline}`), or
# `env = ["mcqa", ...]` for a list of your own.
env-set = "default"
# Your reviews of the contract changes Gym bumps bring: `gymgate ack` writes them here, and they are read with
# gymgate's own (yours win where both review a change).
acks = "{acks}"
# Your own cases: `gymgate case new` writes them here, and they run like gymgate's.
cases = "{cases}"
# Which NeMo RL your verdicts speak for (docs: the RL profile).
rl-profile = "{profile}"
"""


def init_command(install_from: str | None = None) -> int:
    """Write the settings, the folders and the workflow into the working directory; say what was written, what
    was kept, and what to do next."""
    here = Path.cwd()
    found = config.find(here)
    if found is not None and found[0].parent != here:
        raise UsageError(f"{found[0]} already configures gymgate for {here}; run gymgate init where it lies")
    written, kept = [], []

    def put(path: Path, text: str) -> None:
        if path.exists():
            kept.append(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)

    baseline, where = _baseline(here)
    put(here / config.FILE, SETTINGS.format(baseline=baseline, acks=ACKS, cases=CASES, profile=default_name()))
    for folder in (ACKS, CASES):
        put(here / folder / ".gitkeep", "")
    origin = install_from or _installed_from() or PLACEHOLDER
    example = (repo_root() / EXAMPLE).read_text()
    put(here / WORKFLOW, example.replace(PLACEHOLDER, origin))
    _ignore(here, written)
    for path in written:
        print(f"wrote {path.relative_to(here)}")
    for path in kept:
        print(f"kept {path.relative_to(here)} (it exists)")
    print(f"baseline: {baseline} ({where})")
    if origin == PLACEHOLDER:
        print(f"set GYMGATE_FROM in {WORKFLOW} to where CI installs gymgate from (a git URL with a tag or commit)")
    print(
        "next: `gymgate accept --gym-ref <candidate>` judges a bump here; `gymgate ack --review <run>` reviews its "
        "changes into your acks; commit gymgate.toml, gymgate/ and the workflow"
    )
    return EXIT_OK


def _baseline(here: Path) -> tuple[str, str]:
    lock = here / "uv.lock"
    if lock.is_file():
        try:
            return gym_ref_of_lock(lock.read_text(), str(lock)), "the Gym your uv.lock pins"
        except UsageError as exc:
            return baseline_pin(), f"gymgate's baseline pin: {exc}"
    return baseline_pin(), "gymgate's baseline pin: no uv.lock here"


def _installed_from() -> str | None:
    """The git URL (with its commit) this gymgate was installed from, when it was (PEP 610's direct_url.json)."""
    try:
        text = metadata.distribution("gymgate").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    info = json.loads(text)
    vcs = info.get("vcs_info", {})
    if vcs.get("vcs") != "git":
        return None
    return f"git+{info['url']}@{vcs.get('commit_id') or vcs.get('requested_revision')}"


def _ignore(here: Path, written: list[Path]) -> None:
    """Keep an installed gymgate's run folders out of the repository's history."""
    ignore = here / ".gitignore"
    text = ignore.read_text() if ignore.is_file() else ""
    if RUNS in text.split():
        return
    ignore.write_text(text + ("" if not text or text.endswith("\n") else "\n") + RUNS + "\n")
    written.append(ignore)
