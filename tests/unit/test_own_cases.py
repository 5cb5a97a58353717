"""A repository's own cases (--cases, `cases` in gymgate.toml): read before gymgate's (its case of a name wins), its
sets added, `case new` writing there, and the pin environments unchanged by them (their servers are gymgate's)."""

from __future__ import annotations

import os

import pytest

from gymgate.cases import environments
from gymgate.cli import _settle, build_parser
from gymgate.errors import UsageError
from gymgate.locations import CASES_VAR, cases_dir
from gymgate.options import config


@pytest.fixture
def own(tmp_path, monkeypatch):
    folder = tmp_path / "our-cases"
    folder.mkdir()
    shipped = (cases_dir() / "mcqa.toml").read_text()
    (folder / "mcqa_ours.toml").write_text(shipped.replace('name = "mcqa"', 'name = "mcqa_ours"'))
    (folder / "mcqa.toml").write_text(shipped.replace("line = 0", "line = 1"))
    (folder / "sets.toml").write_text('[sets]\nours = ["mcqa_ours", "code_gen"]\n')
    monkeypatch.setenv(CASES_VAR, str(folder))
    return folder


def test_the_repositorys_cases_join_gymgates_and_win_by_name(own):
    envs = {e.name: e for e in environments.all_environments()}
    assert envs["mcqa_ours"].case_file == own / "mcqa_ours.toml"
    assert envs["mcqa"].case_file == own / "mcqa.toml"  # yours, not gymgate's
    assert envs["code_gen"].case_file == cases_dir() / "code_gen.toml"
    sets = environments.environment_sets()
    assert sets["ours"] == ["mcqa_ours", "code_gen"] and "mcqa" in sets["default"]
    assert environments.names_asked(None, "ours") == ["mcqa_ours", "code_gen"]


def test_a_case_on_gymgates_servers_keeps_the_pin_environment_and_a_new_server_needs_the_wide_one(own):
    envs = {e.name: e for e in environments.all_environments()}
    assert not environments.needs_wide([envs["mcqa_ours"], envs["code_gen"]])
    text = (own / "mcqa_ours.toml").read_text()
    (own / "elsewhere.toml").write_text(
        text.replace('name = "mcqa_ours"', 'name = "elsewhere"').replace(
            'server_dirs = ["resources_servers/mcqa"', 'server_dirs = ["resources_servers/not_in_gymgates_cases"'
        )
    )
    assert environments.needs_wide([e for e in environments.all_environments() if e.name == "elsewhere"])


def test_case_new_writes_into_the_repositorys_first_folder(own, monkeypatch):
    assert environments.new_case_dir() == own
    monkeypatch.delenv(CASES_VAR)
    monkeypatch.setattr(environments, "installed", lambda: True)
    with pytest.raises(UsageError, match="--cases DIR"):
        environments.new_case_dir()


def test_the_flag_reaches_every_child_as_its_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(CASES_VAR, "")  # restored (unset) after the test: _settle sets it
    monkeypatch.chdir(tmp_path)
    config.settings.cache_clear()
    args = build_parser().parse_args(["cases", "list", "--gym-ref", "0.7.0", "--cases", "mine", "--cases", "more"])
    _settle(args)
    assert os.environ[CASES_VAR] == os.pathsep.join([str(tmp_path / "mine"), str(tmp_path / "more")])
