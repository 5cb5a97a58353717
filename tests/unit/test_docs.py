"""The docs stay true and readable: the reference is what the code generates (a command, option, variable, exit code
or category missing from it fails here), the site builds strictly (a broken link fails), the README stays short
with every category word linked to its definition, and the terminal views shown in the docs fit their screens."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gymgate import cli, options, reference
from gymgate.errors import EXIT_CODES
from gymgate.locations import repo_root
from gymgate.report.terminal import SCREEN_ROWS
from gymgate.verdict import CATEGORIES, MEANINGS

ROOT = repo_root()
PAGES = ROOT / "docs" / "reference"
README_LINES = 150


def test_the_committed_reference_is_what_the_code_generates():
    assert reference.stale(PAGES) == [], "run: python -m gymgate.reference docs/reference (or nox -s docs)"


def test_the_reference_names_every_command_option_variable_exit_code_and_category():
    pages = {name: page() for name, page in reference.PAGES.items()}
    commands = pages["commands.md"]
    for command in cli.COMMANDS:
        assert (f"## gymgate {command.name}" in commands) != command.internal, command.name
    for option in options.OPTIONS:
        if not option.internal and any(not c.internal and c.name in option.commands for c in cli.COMMANDS):
            assert f"`{option.flags[0]}`" in commands, option.name
    assert all(f"`{v.var}`" in pages["variables.md"] for v in options.VARIABLES)
    assert all(f"| {e.code} | {e.name} |" in pages["exit-codes.md"] for e in EXIT_CODES)
    assert all(f"### {c}\n\n" in pages["verdicts.md"] for c in CATEGORIES) and set(MEANINGS) == set(CATEGORIES)


def test_a_declaration_the_pages_do_not_show_yet_makes_them_stale(monkeypatch, tmp_path):
    """The currency check is not vacuous: each kind of declaration added makes its page stale."""
    reference.write(tmp_path)
    assert reference.stale(tmp_path) == []
    new = cli.Command("frobnicate", "a command nobody documented", "gymgate.cli:resolve")
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, new))
    assert reference.stale(tmp_path) == ["commands.md"]
    monkeypatch.undo()
    code = dataclasses.replace(EXIT_CODES[-1], code=99, name="new")
    monkeypatch.setattr(reference, "EXIT_CODES", (*EXIT_CODES, code))
    assert reference.stale(tmp_path) == ["exit-codes.md"]
    monkeypatch.undo()
    monkeypatch.setitem(MEANINGS, CATEGORIES[0], "a meaning reworded")
    assert reference.stale(tmp_path) == ["verdicts.md"]


def test_the_findings_pictures_are_what_the_committed_figures_draw():
    from tools import findings

    assert findings.stale() == [], "run: python -m tools.findings"


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [str(mkdocs), "build", "--strict", "-f", str(config), "-d", str(site)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=config.parent)


def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path):
    built = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "reference" / "exit-codes" / "index.html").is_file()
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copytree(ROOT / "examples", copy / "examples")  # what the CI page includes
    with (copy / "docs" / "tutorial.md").open("a") as page:
        page.write("\nSee [the missing page](how-to/nowhere.md).\n")
    broken = _mkdocs(copy / "mkdocs.yml", tmp_path / "broken")
    assert broken.returncode != 0 and "nowhere.md" in broken.stdout + broken.stderr


def test_the_readme_is_short_and_links_every_category_word_to_its_definition():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_LINES
    first_command = readme.index("nox -s accept -- --gym-ref")
    assert first_command < readme.index("nox -s tests")  # the bump first; gymgate's own suite last
    assert len(readme[:first_command].splitlines()) <= 40
    linked = set(re.findall(r"\]\(docs/reference/verdicts\.md#([a-z-]+)\)", readme))
    assert linked == {reference.slug(c) for c in CATEGORIES}
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):  # every relative link reaches a file
        assert (ROOT / target).is_file(), target


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "docs" / "examples").glob("*.txt")))
def test_the_terminal_views_the_docs_show_fit_their_screen(name):
    """Each view was printed by a real bump at the width its name says: no more rows than a screen, and no row
    wider than the terminal except a command, which is never broken (it pastes whole)."""
    width = int(name.rsplit(".", 2)[-2])
    rows = (ROOT / "docs" / "examples" / name).read_text().splitlines()
    shown = sum(max(1, -(-len(row) // width)) for row in rows)
    assert shown <= SCREEN_ROWS, name
    assert all(len(row) <= width or row.startswith(("  gymgate ", "  nox ", "  open ")) for row in rows), name


def test_ci_runs_the_test_command_the_readme_gives():
    """.ci/run is the README's test command and nothing else: what CI installs, a new user's copy installs too."""
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line for line in script if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert len(commands) == 1, commands
    readme = (ROOT / "README.md").read_text()
    assert f"```bash\n{commands[0]}\n```" in readme
