"""Per-ref uv projects: extras read from the Gym itself, and lock/pin agreement checked."""

from __future__ import annotations

import shutil

import pytest

from gymgate.envs.project import check_artifact, declared_extras, project_dir, render_project
from gymgate.errors import InfraError, StaleLockError
from gymgate.locations import envs_dir
from gymgate.refs import resolve_ref
from gymgate.refs.distribution import Distribution
from tests.helpers import write_tree


def test_extras_come_from_the_trees_own_requirement_files(tmp_path):
    tree = write_tree(
        tmp_path / "Gym",
        "0.4.0",
        extra_files={
            "resources_servers/mcqa/requirements.txt": "-e nemo-gym[dev] @ ../../\ntiktoken  # tokenizer\n\n",
            "resources_servers/structured_outputs/requirements.txt": "-e nemo-gym[dev] @ ../../\nxmltodict==1.0.2\n",
            "responses_api_models/vllm_model/pyproject.toml": '[project]\nname = "v"\ndependencies = ["nemo-gym[dev]", "aiofiles"]\n',
        },
    )
    extras = declared_extras(Distribution(resolve_ref(str(tree))))
    assert extras == {
        "resources_servers/mcqa": ["tiktoken"],
        "resources_servers/structured_outputs": ["xmltodict==1.0.2"],
        "responses_api_models/vllm_model": ["aiofiles"],
    }


def test_rendered_project_names_gym_by_path_for_local_refs(tmp_path):
    tree = write_tree(tmp_path / "Gym", "0.4.0")
    source = resolve_ref(str(tree))
    data = render_project(source, {"resources_servers/mcqa": ["tiktoken"]})
    deps = data["project"]["dependencies"]
    assert deps[0] == "nemo-gym" and "tiktoken" in deps and "gymgate" in deps and "pytest-xdist>=3.6,<3.9" in deps
    assert data["tool"]["uv"]["sources"]["nemo-gym"] == {"path": str(tree.resolve()), "editable": True}
    assert data["tool"]["gymgate"]["gym-digest"] == source.digest


def test_the_same_checkout_in_two_places_gets_two_projects(tmp_path):
    # The generated lock names the checkout by its path; sharing one project across paths would point a run at a
    # tree that may no longer exist (found by the bump tests, whose checkouts live in per-test folders).
    first, second = write_tree(tmp_path / "a" / "gym", "0.4.0"), write_tree(tmp_path / "b" / "gym", "0.4.0")
    a, b = resolve_ref(str(first)), resolve_ref(str(second))
    assert a.digest == b.digest
    assert project_dir(a) != project_dir(b)
    assert project_dir(a) == project_dir(resolve_ref(str(first)))
    assert project_dir(resolve_ref("0.4.0")) == envs_dir() / "0.4.0"


def test_committed_pin_projects_carry_the_pinned_artifact():
    for pin in ("0.2.0", "0.2.1", "0.3.0", "0.4.0"):
        check_artifact(envs_dir() / pin, resolve_ref(pin))  # raises on any disagreement


def test_lock_with_another_artifact_hash_is_a_hash_mismatch(tmp_path):
    source = resolve_ref("0.4.0")
    fake = tmp_path / "0.4.0"
    fake.mkdir()
    text = (envs_dir() / "0.4.0" / "uv.lock").read_text().replace(source.digest, "0" * 64)
    (fake / "uv.lock").write_text(text)
    with pytest.raises(InfraError, match="hash mismatch"):
        check_artifact(fake, source)


def test_lock_of_another_version_is_stale(tmp_path):
    fake = tmp_path / "0.4.0"
    shutil.copytree(envs_dir() / "0.3.0", fake)
    with pytest.raises(StaleLockError, match="nox -s lock -- 0.4.0"):
        check_artifact(fake, resolve_ref("0.4.0"))
    (fake / "uv.lock").unlink()
    with pytest.raises(StaleLockError, match="missing"):
        check_artifact(fake, resolve_ref("0.4.0"))


def test_every_pin_carries_the_requirements_of_every_case():
    """A case added to cases/ must reach the pin environments (`nox -s lock`), or its servers would not import."""
    import tomllib

    from gymgate.locations import envs_dir
    from gymgate.refs.pins import known_pins, load_pin

    for pin in known_pins():
        committed = tomllib.loads((envs_dir() / pin / "pyproject.toml").read_text())
        declared = committed["tool"]["gymgate"]["extras-declared-by"]
        assert declared == {k: sorted(v) for k, v in declared_extras(Distribution(load_pin(pin))).items()}, pin
