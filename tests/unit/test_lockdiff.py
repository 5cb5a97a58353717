"""The lock diff a comparison report opens with, on the committed pin locks."""

from __future__ import annotations

from gymgate.compare.lockdiff import diff, packages
from gymgate.locations import envs_dir


def test_0_2_1_to_0_4_0_shows_the_gym_and_openai_bumps_and_the_new_dependencies():
    d = diff(envs_dir() / "0.2.1" / "uv.lock", envs_dir() / "0.4.0" / "uv.lock")
    assert d.highlighted["nemo-gym"] == ("0.2.1", "0.4.0")
    assert d.highlighted["openai"] == ("2.6.1", "2.7.2")
    assert "ray" not in d.highlighted  # the same Ray under every pin at this index snapshot
    assert {"mcp", "anthropic", "tiktoken", "xmltodict"} <= set(d.added)
    assert not d.removed and not d.downgraded


def test_identical_locks_have_an_empty_diff_and_reverse_is_a_downgrade():
    lock = envs_dir() / "0.3.0" / "uv.lock"
    assert diff(lock, lock).empty
    back = diff(envs_dir() / "0.4.0" / "uv.lock", lock)
    assert back.downgraded["nemo-gym"] == ("0.4.0", "0.3.0") and "mcp" in back.removed


def test_packages_skip_the_project_itself_and_editables():
    found = packages(envs_dir() / "0.4.0" / "uv.lock")
    assert found["nemo-gym"] == "0.4.0" and found["python"] == ">=3.12"
    assert "gymgate" not in found and not any(name.startswith("gymgate-env") for name in found)


def test_a_gym_checkout_is_shown_by_its_path_and_counted_as_replaced(tmp_path):
    pinned = envs_dir() / "0.4.0" / "uv.lock"
    text = pinned.read_text()
    start = text.index('[[package]]\nname = "nemo-gym"')
    end = text.index("[[package]]", start + 1)
    checkout = tmp_path / "uv.lock"
    checkout.write_text(
        text[:start] + '[[package]]\nname = "nemo-gym"\nsource = { editable = "/src/gym" }\n\n' + text[end:]
    )
    d = diff(pinned, checkout)
    assert d.replaced == {"nemo-gym": ("0.4.0", "checkout /src/gym")}
    assert d.highlighted["nemo-gym"] == ("0.4.0", "checkout /src/gym")
    assert not d.removed and not d.empty
    # A git commit's checkout is named by the commit, its subject and version (refs.source.nemo_gym_label).
    label = '0.4.0 (git v0.4.0 = d67ad6611abc "Release 0.4.0")'
    assert diff(pinned, checkout, (None, label)).highlighted["nemo-gym"] == ("0.4.0", label)
