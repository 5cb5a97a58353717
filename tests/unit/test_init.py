"""`gymgate init` in an RL repository: its settings (the baseline its uv.lock pins), folders for its reviews and
cases, the CI workflow installing gymgate from where it is kept; nothing that exists overwritten."""

from __future__ import annotations

from gymgate.cli import main
from gymgate.options import config

LOCK = """version = 1
[[package]]
name = "nemo-gym"
version = "0.5.1"
source = { registry = "https://pypi.org/simple" }
"""


def test_init_writes_settings_folders_and_workflow_and_keeps_what_exists(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "uv.lock").write_text(LOCK)
    (tmp_path / ".gitignore").write_text("__pycache__/")
    assert main(["init", "--from", "git+https://example.org/gymgate@v1.2"]) == 0
    out = capsys.readouterr().out
    assert "wrote gymgate.toml" in out and "baseline: 0.5.1 (the Gym your uv.lock pins)" in out
    config.settings.cache_clear()
    here = config.settings()
    assert here.path == tmp_path / "gymgate.toml"
    assert here.values["baseline"] == "0.5.1" and here.values["acks"] == [tmp_path / "gymgate" / "acks"]
    assert here.values["cases"] == [tmp_path / "gymgate" / "cases"] and here.values["env_set"] == "default"
    assert (tmp_path / "gymgate" / "acks").is_dir() and (tmp_path / "gymgate" / "cases").is_dir()
    workflow = (tmp_path / ".github" / "workflows" / "gymgate.yml").read_text()
    assert "GYMGATE_FROM: git+https://example.org/gymgate@v1.2" in workflow and "your-org" not in workflow
    assert (tmp_path / ".gitignore").read_text() == "__pycache__/\n.gymgate/\n"

    (tmp_path / "gymgate.toml").write_text('baseline = "0.4.0"  # ours\n')
    assert main(["init"]) == 0
    assert "kept gymgate.toml (it exists)" in capsys.readouterr().out
    assert (tmp_path / "gymgate.toml").read_text() == 'baseline = "0.4.0"  # ours\n'
    assert (tmp_path / ".gitignore").read_text().count(".gymgate/") == 1
    config.settings.cache_clear()


def test_init_below_a_configured_folder_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "gymgate.toml").write_text('baseline = "0.4.0"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    config.settings.cache_clear()
    assert main(["init"]) == 2
    assert "already configures gymgate" in capsys.readouterr().err
    config.settings.cache_clear()


def test_an_installed_gymgate_does_not_relock_its_own_pins(monkeypatch, capsys):
    monkeypatch.setattr("gymgate.envs.prepare.installed", lambda: True)
    assert main(["lock"]) == 2
    assert "checkout of gymgate" in capsys.readouterr().err
