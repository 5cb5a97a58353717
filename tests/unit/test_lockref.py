"""`gymgate gym-ref-of UV_LOCK` (refs/lockref.py): the Gym ref an RL repository's lock pins, as the CI workflow
reads it at a bump PR's head and base."""

from __future__ import annotations

import pytest

from gymgate.cli import main
from gymgate.errors import UsageError
from gymgate.locations import envs_dir
from gymgate.refs.lockref import gym_ref_of_lock

SHA = "d67ad6611cfe0c1a2b3c4d5e6f708192a3b4c5d6"


def _lock(source: str, version: str = "0.4.0") -> str:
    return f'version = 1\n\n[[package]]\nname = "nemo-gym"\nversion = "{version}"\nsource = {source}\n'


def test_an_index_version_and_a_git_commit():
    assert gym_ref_of_lock((envs_dir() / "0.3.0" / "uv.lock").read_text()) == "0.3.0"  # a real lock of a pin
    git = _lock(f'{{ git = "https://github.com/NVIDIA-NeMo/Gym.git?rev=main#{SHA}" }}')
    assert gym_ref_of_lock(git) == SHA


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (_lock('{ editable = "../Gym" }'), "local path"),
        (_lock('{ git = "https://github.com/NVIDIA-NeMo/Gym.git?rev=main" }'), "without a commit"),
        ('version = 1\n\n[[package]]\nname = "ray"\nversion = "2.0"\n', "does not lock nemo-gym"),
        ("not toml [", "not a uv lock"),
    ],
)
def test_what_names_no_ref_is_a_usage_error(text, why):
    with pytest.raises(UsageError, match=why):
        gym_ref_of_lock(text)


def test_the_command_prints_the_ref_alone(tmp_path, capsys):
    lock = tmp_path / "uv.lock"
    lock.write_text(_lock(f'{{ git = "https://github.com/NVIDIA-NeMo/Gym.git#{SHA}" }}'))
    assert main(["gym-ref-of", str(lock)]) == 0
    assert capsys.readouterr().out == SHA + "\n"
    assert main(["gym-ref-of", str(tmp_path / "missing.lock")]) == 2
