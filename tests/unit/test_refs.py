"""Every accepted --gym-ref form resolves to the right GymSource; every rejected one says why."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gymgate.errors import UsageError
from gymgate.refs import resolve_ref
from gymgate.refs.pins import baseline_pin, known_pins
from gymgate.refs.scratch import commit_all, git
from gymgate.refs.source import KIND_GIT, KIND_INDEX, KIND_PIN, KIND_TREE, KIND_WHEEL, nemo_gym_label
from tests.helpers import write_tree, write_wheel


def test_every_committed_pin_resolves_with_its_artifact_hash():
    # Every release on the index, 0.3.1 (yanked there) included.
    assert known_pins() == ["0.2.0", "0.2.1", "0.3.0", "0.3.1", "0.4.0", "0.5.0", "0.5.1", "0.6.0", "0.7.0"]
    for name in known_pins():
        source = resolve_ref(name)
        assert source.kind == KIND_PIN and source.pinned
        assert source.version == name
        assert len(source.digest) == 64 and int(source.digest, 16)
        newest = tuple(map(int, name.split("."))) >= (0, 5, 0)
        assert source.requires_python == (">=3.13.14" if newest else ">=3.12")
    assert resolve_ref("0.4.0").digest.startswith("955f08027a2f")


def test_baseline_is_a_known_pin():
    assert baseline_pin() in known_pins()


@pytest.mark.parametrize("ref", ["typo", "latest", "0.4", "main", "--", "zzzzzzz", "0x1234567"])
def test_unknown_refs_list_accepted_forms_and_pins(ref):
    with pytest.raises(UsageError) as info:
        resolve_ref(ref)
    message = str(info.value)
    assert "--gym-ref accepts" in message
    assert "0.2.0, 0.2.1, 0.3.0, 0.3.1, 0.4.0, 0.5.0, 0.5.1, 0.6.0, 0.7.0" in message
    assert info.value.exit_code == 2


def test_missing_path_is_rejected(tmp_path):
    with pytest.raises(UsageError, match="nothing is there"):
        resolve_ref(str(tmp_path / "no-such-gym"))


def test_local_wheel_is_hashed_by_content(tmp_path):
    wheel = write_wheel(tmp_path / "nemo_gym-0.4.0-py3-none-any.whl")
    source = resolve_ref(str(wheel))
    assert (source.kind, source.version, source.requires_python) == (KIND_WHEEL, "0.4.0", ">=3.12")
    other = write_wheel(tmp_path / "other" / "nemo_gym-0.4.0-py3-none-any.whl", version="0.4.0", requires=">=3.13")
    assert resolve_ref(str(other)).digest != source.digest  # same version string, different bytes


def test_wheel_of_another_project_is_rejected(tmp_path):
    wheel = write_wheel(tmp_path / "ray-2.0-py3-none-any.whl", name="ray", version="2.0")
    with pytest.raises(UsageError, match="not nemo-gym"):
        resolve_ref(str(wheel))


def test_non_wheel_file_is_rejected(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("x")
    with pytest.raises(UsageError, match="not a wheel"):
        resolve_ref(str(path))


def test_local_checkout_version_and_digest_follow_content(tmp_path):
    tree = write_tree(tmp_path / "Gym", "0.4.0")
    first = resolve_ref(str(tree))
    assert (first.kind, first.version) == (KIND_TREE, "0.4.0")
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert resolve_ref(str(tree)).digest == first.digest  # caches do not change the code
    (tree / "nemo_gym" / "extra.py").write_text("X = 1\n")
    assert resolve_ref(str(tree)).digest != first.digest


def test_directory_that_is_not_gym_is_rejected(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text('[project]\nname = "other"\n')
    with pytest.raises(UsageError, match="not nemo-gym"):
        resolve_ref(str(tmp_path / "proj"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no pyproject.toml"):
        resolve_ref(str(tmp_path / "empty"))


class _Index(BaseHTTPRequestHandler):
    files: list = []

    def do_GET(self):  # noqa: N802
        if self.path.rstrip("/") != "/simple/nemo-gym":
            self.send_error(404)
            return
        body = json.dumps({"files": self.files, "meta": {"api-version": "1.1"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_index(monkeypatch):
    _Index.files = [
        {
            "filename": "nemo_gym-0.3.0-py3-none-any.whl",
            "hashes": {"sha256": "a" * 64},
            "requires-python": ">=3.12",
            "url": "http://127.0.0.1/x.whl",
        },
        {
            "filename": "nemo_gym-0.9.1-py3-none-any.whl",
            "hashes": {"sha256": "b" * 64},
            "requires-python": ">=3.12",
            "url": "http://127.0.0.1/y.whl",
        },
        {
            "filename": "nemo_gym-0.9.1.tar.gz",
            "hashes": {"sha256": "c" * 64},
            "requires-python": ">=3.12",
            "url": "http://127.0.0.1/y.tar.gz",
        },
        {
            "filename": "nemo_gym-0.9.2-py3-none-any.whl",
            "hashes": {"sha256": "d" * 64},
            "requires-python": ">=3.12",
            "url": "http://127.0.0.1/z.whl",
            "yanked": "wrong version number",
        },
    ]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("UV_DEFAULT_INDEX", f"http://127.0.0.1:{server.server_address[1]}/simple")
    yield server
    server.shutdown()


def test_unpinned_index_version_prefers_the_wheel(fake_index):
    source = resolve_ref("0.9.1")
    assert (source.kind, source.pinned, source.digest) == (KIND_INDEX, False, "b" * 64)
    assert source.extra["filename"] == "nemo_gym-0.9.1-py3-none-any.whl"
    assert "unpinned" in source.describe()


def test_yanked_version_resolves_only_when_asked_for_exactly_and_says_so(fake_index):
    source = resolve_ref("0.9.2")
    assert source.extra["yanked"] == "wrong version number"
    assert "yanked" in source.describe()


def test_version_absent_from_index_lists_what_is_there(fake_index):
    with pytest.raises(UsageError) as info:
        resolve_ref("0.9.9")
    assert "versions there: 0.3.0, 0.9.1." in str(info.value)  # yanked 0.9.2 is not offered


def test_pins_win_over_the_index(fake_index):
    assert resolve_ref("0.3.0").kind == KIND_PIN


@pytest.fixture
def gym_repo(tmp_path):
    repo = tmp_path / "gym-repo"
    write_tree(repo, "0.3.0")
    git(repo, "init", "-q")
    first = commit_all(repo, "0.3.0")
    write_tree(repo, "0.4.0")
    second = commit_all(repo, "0.4.0")
    return repo, first, second


def test_git_sha_full_and_abbreviated(gym_repo, cache):
    repo, first, second = gym_repo
    old = resolve_ref(first, gym_repo=str(repo))
    assert (old.kind, old.version, old.commit, old.digest) == (KIND_GIT, "0.3.0", first, first)
    new = resolve_ref(second[:8], gym_repo=str(repo))
    assert (new.version, new.commit) == ("0.4.0", second)
    assert (new.path / "nemo_gym" / "package_info.py").read_text().startswith("MAJOR = 0\nMINOR = 4")
    assert new.path.parent == cache / "src"


def test_git_repo_from_environment_variable(gym_repo, cache, monkeypatch):
    repo, first, _ = gym_repo
    monkeypatch.setenv("GYMGATE_GYM_REPO", str(repo))
    assert resolve_ref(first[:10]).commit == first


def test_git_sha_not_in_repo(gym_repo, cache):
    repo, _, _ = gym_repo
    with pytest.raises(UsageError, match="is not in Gym repository"):
        resolve_ref("deadbeefdeadbeef", gym_repo=str(repo))


def test_unreachable_repository_points_at_gym_repo(cache, tmp_path):
    with pytest.raises(UsageError, match="cannot reach Gym repository .*--gym-repo"):
        resolve_ref("abcdef1", gym_repo="http://127.0.0.1:9/nowhere.git")
    with pytest.raises(UsageError, match="does not exist"):
        resolve_ref("abcdef1", gym_repo=str(tmp_path / "missing"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(UsageError, match="not a git repository"):
        resolve_ref("abcdef1", gym_repo=str(tmp_path / "plain"))


def test_tags_and_branches_of_a_named_repository_resolve_to_their_commit(gym_repo, cache, monkeypatch):
    repo, first, second = gym_repo
    git(repo, "tag", "v0.3.0", first)
    git(repo, "branch", "-M", "main")
    tagged = resolve_ref("v0.3.0", gym_repo=str(repo))
    assert (tagged.kind, tagged.commit, tagged.digest, tagged.version) == (KIND_GIT, first, first, "0.3.0")
    assert tagged.name == f"git-{first[:12]}"  # keyed by the commit, whatever it was asked by
    assert (tagged.extra["ref"], tagged.extra["ref_kind"], tagged.extra["subject"]) == ("v0.3.0", "tag", "0.3.0")
    assert f"{first} (tag v0.3.0) in {repo}" in tagged.describe()
    branch = resolve_ref("main", gym_repo=str(repo))
    assert (branch.commit, branch.extra["ref_kind"]) == (second, "branch")
    assert nemo_gym_label(branch.to_json()) == f'0.4.0 (git main = {second[:12]} "0.4.0")'
    # The branch moves: the same name now resolves (and is keyed) to the new commit.
    write_tree(repo, "0.4.1")
    third = commit_all(repo, "0.4.1")
    assert resolve_ref("main", gym_repo=str(repo)).digest == third
    with pytest.raises(UsageError, match="neither a tag nor a branch of Gym repository"):
        resolve_ref("no-such-branch", gym_repo=str(repo))
    # Without a named repository a name is never looked up upstream, and v<version> stays the index's.
    monkeypatch.delenv("GYMGATE_GYM_REPO", raising=False)
    with pytest.raises(UsageError, match="unknown Gym ref 'main'"):
        resolve_ref("main")


def test_a_commit_whose_repository_lacks_some_blobs_is_exported_without_them(gym_repo, cache, capsys):
    """A mirror stored without some large data blobs: git archive refuses the commit; gymgate exports the rest, names
    what it left out, and records it on the source."""
    repo, _, _ = gym_repo
    (repo / "resources_servers" / "big").mkdir(parents=True)
    (repo / "resources_servers" / "big" / "paper.pdf").write_text("a large data file\n")
    commit = commit_all(repo, "add data")
    blob = git(repo, "rev-parse", f"{commit}:resources_servers/big/paper.pdf")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # the mirror never fetched it
    source = resolve_ref(commit, gym_repo=str(repo))
    assert "1 file(s) of" in capsys.readouterr().out
    assert source.extra["missing"] == "resources_servers/big/paper.pdf"
    assert not (source.path / "resources_servers" / "big" / "paper.pdf").exists()
    assert (source.path / "nemo_gym" / "package_info.py").is_file()  # everything else is there
