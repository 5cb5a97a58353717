"""The repository's own settings (gymgate.toml, or [tool.gymgate] in pyproject.toml, found from the working directory
up): each key an option's flag without dashes, converted as the flag would be; a flag, then a GYMGATE_* variable,
overrides it; a key no option has or a value of the wrong type is a usage error naming the file and the key."""

from __future__ import annotations

import pytest

from gymgate.cli import build_parser, main
from gymgate.errors import UsageError
from gymgate.options import config


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A consumer repository with a sub-folder to run in; the settings read afresh."""
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "sub" / "deeper")
    for var in ("GYMGATE_BASELINE", "GYMGATE_ENVS", "GYMGATE_RL_PROFILE", "GYMGATE_VARIANTS"):
        monkeypatch.delenv(var, raising=False)
    config.settings.cache_clear()
    yield tmp_path
    config.settings.cache_clear()


def test_the_nearest_settings_are_found_walking_up_and_gymgate_toml_wins(repo):
    (repo / "pyproject.toml").write_text('[tool.gymgate]\nbaseline = "0.6.0"\n')
    assert config.settings().values == {"baseline": "0.6.0"}
    config.settings.cache_clear()
    (repo / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.gymgate]: passed over
    (repo / "gymgate.toml").write_text('baseline = "0.5.1"\n')  # beside the pyproject: wins over it
    assert config.settings().values == {"baseline": "0.5.1"} and config.settings().path == repo / "gymgate.toml"


def test_values_are_converted_as_their_flags_would_be(repo):
    (repo / "gymgate.toml").write_text(
        'env = ["mcqa", "code_gen"]\nno-replays = true\nvariants = "all"\nattempts = 3\nrl-profile = "7ea279ab"\n'
    )
    values = config.settings().values
    assert values["envs"] == ["mcqa", "code_gen"] and values["replay"] is False  # --no-replays sets replay false
    assert (values["variants"], values["attempts"], values["rl_profile"]) == ("all", 3, "7ea279ab")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("bogus = 1\n", "unknown setting 'bogus'"),
        ('variants = "most"\n', "variants: expected one of none, default, all, got 'most'"),
        ("attempts = 99\n", "attempts: expected a number of attempts"),
        ('no-replays = "yes"\n', "no-replays: expected true or false"),
        ("baseline = [1]\n", "baseline: expected a single value"),
        ("baseline = \n", "cannot be read as TOML"),
    ],
)
def test_a_malformed_setting_is_a_usage_error_naming_the_file_and_key(repo, text, says):
    (repo / "gymgate.toml").write_text(text)
    with pytest.raises(UsageError, match=says):
        config.settings()
    assert main(["config"]) == 2  # the command says so too, and runs nothing


def test_a_flag_then_a_variable_overrides_the_file(repo, monkeypatch):
    (repo / "gymgate.toml").write_text('baseline = "0.6.0"\nrl-profile = "7ea279ab"\n')
    assert build_parser().parse_args(["accept", "--gym-ref", "0.7.0"]).baseline == "0.6.0"
    assert build_parser().parse_args(["accept", "--gym-ref", "0.7.0", "--baseline", "0.5.0"]).baseline == "0.5.0"
    monkeypatch.setenv("GYMGATE_BASELINE", "0.4.0")
    assert build_parser().parse_args(["accept", "--gym-ref", "0.7.0"]).baseline == "0.4.0"
    assert config.effective(config.keyed()["baseline"]) == ("0.4.0", config.VARIABLE)
    assert config.effective(config.keyed()["rl-profile"])[1].endswith("gymgate.toml: rl-profile")


def test_gymgate_config_prints_each_setting_and_its_source(repo, capsys):
    (repo / "pyproject.toml").write_text('[tool.gymgate]\nenv = ["mcqa"]\n')
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert f"settings file: {repo / 'pyproject.toml'}" in out
    assert f"mcqa  ([tool.gymgate] of {repo / 'pyproject.toml'}: env)" in out
    assert "variants" in out and "(default)" in out


def test_a_folder_the_file_names_is_relative_to_the_file(repo):
    (repo / "gymgate.toml").write_text('acks = "gymgate/acks"\nruns-dir = "/abs/runs"\n')
    values = config.settings().values
    assert values["acks"] == [repo / "gymgate" / "acks"]  # not the sub-folder one runs in
    assert str(values["runs_dir"]) == "/abs/runs"


def test_the_reviews_folders_have_a_variable_and_a_flag_wins(repo, monkeypatch):
    from pathlib import Path

    from gymgate.cli import _settle

    monkeypatch.setenv("GYMGATE_ACKS", "/reviews:/more")
    args = build_parser().parse_args(["accept", "--gym-ref", "0.7.0"])
    _settle(args)
    assert args.acks == [Path("/reviews"), Path("/more")]
    args = build_parser().parse_args(["accept", "--gym-ref", "0.7.0", "--acks", "mine"])
    _settle(args)
    assert args.acks == [Path("mine")]


def test_the_settings_reviews_reach_the_command(repo, monkeypatch):
    from gymgate.cli import _settle

    monkeypatch.delenv("GYMGATE_ACKS", raising=False)
    (repo / "gymgate.toml").write_text('acks = ["reviews", "more"]\n')
    args = build_parser().parse_args(["compare", "a", "b"])
    _settle(args)
    assert args.acks == [repo / "reviews", repo / "more"]


def test_environments_on_the_command_line_replace_the_files_set(repo, monkeypatch):
    from gymgate.cli import _settle
    from gymgate.options import config as settings_module

    monkeypatch.setattr(settings_module, "EXPORTED", set())
    (repo / "gymgate.toml").write_text('env-set = "more"\n')
    args = build_parser().parse_args(["accept", "--gym-ref", "0.7.0", "--env", "mcqa"])
    _settle(args)
    assert args.envs == ["mcqa"]  # the flag's environment alone, not the file's set with it
    args = build_parser().parse_args(["accept", "--gym-ref", "0.7.0"])
    _settle(args)
    assert "gpqa_diamond" in args.envs and "mcqa" not in args.envs  # the file's set
