"""Which RL a verdict speaks for: the declared profiles read whole, each fact with its source; an unknown or
malformed one is a usage error naming it; leaves are tagged by how that RL uses them; two runs judged as different
RLs are not compared."""

from __future__ import annotations

import pytest

from gymgate.errors import UsageError
from gymgate.rl import profile
from gymgate.runfolder import RunFolder


def test_every_profile_reads_and_says_where_rl_says_each_fact():
    assert profile.names() == ["7ea279ab", "pr4061"]  # oldest first
    assert profile.default_name() == "pr4061"  # the newest modelled: at least 7ea279ab, with RL#4014 and RL#4061
    for name in profile.names():
        found = profile.load(name)
        assert set(found.sources) == set(profile.FACTS) and all(found.sources.values())
        assert found.rl_commit.startswith("7ea279ab") and len(found.digest) == 64
    old, new = profile.load("7ea279ab"), profile.load("pr4061")
    assert (old.mask_read, new.mask_read) == (
        ("instance_config.mask_sample",),
        ("mask_sample", "instance_config.mask_sample"),
    )
    assert (old.rejects_failure_class, new.rejects_failure_class) == (False, True)
    assert (old.stream_tuple, new.stream_tuple) == (3, 4)
    assert new.leaves == old.leaves  # extended: what pr4061 does not restate is 7ea279ab's
    assert old.digest != new.digest


@pytest.mark.parametrize(
    ("leaf", "use"),
    [
        ("result.reward", profile.TRAINS),
        ("result.response.output.2.generation_token_ids.7", profile.TRAINS),
        ("requests.policy.1.body.temperature", profile.TRAINS),  # what the policy was sampled with
        ("result.agent_ref.name", profile.ROUTES),
        ("result._ng_task_index", profile.ROUTES),
        ("result.response.usage.total_tokens", profile.LOGS),  # in the full-result table only
        ("result.verifier_metadata.score", profile.LOGS),
        ("fault.handled", profile.NOT_READ),
    ],
)
def test_a_leaf_is_tagged_by_the_first_use_that_names_it(leaf, use):
    assert profile.load("7ea279ab").use_of(leaf) == use


def test_masked_at_is_the_first_place_rl_reads_that_says_true():
    old, new = profile.load("7ea279ab"), profile.load("pr4061")
    top = {"mask_sample": True, "instance_config": {"mask_sample": False}}
    assert (old.masked_at(top), new.masked_at(top)) == ("", "mask_sample")
    nested = {"mask_sample": False, "instance_config": {"mask_sample": True}}
    assert (old.masked_at(nested), new.masked_at(nested)) == ("instance_config.mask_sample",) * 2
    assert new.masked_at({"reward": 1.0, "instance_config": None}) == ""


def test_an_unknown_or_malformed_profile_is_a_usage_error_naming_it(tmp_path, monkeypatch):
    with pytest.raises(UsageError, match="unknown RL profile 'nope'; gymgate models: 7ea279ab, pr4061"):
        profile.load("nope")
    monkeypatch.setattr(profile, "PROFILES_DIR", tmp_path)
    profile.load.cache_clear()
    (tmp_path / "broken.toml").write_text('name = "broken"\ndescribes = "x"\nrl_commit = "x"\norder = 1\n')
    (tmp_path / "loop.toml").write_text('extends = "loop"\n')
    try:
        with pytest.raises(UsageError, match=r"RL profile broken .*missing or malformed '\[mask_sample\]'"):
            profile.load("broken")
        with pytest.raises(UsageError, match="extends itself"):
            profile.load("loop")
    finally:
        profile.load.cache_clear()


def test_a_run_names_its_profile_and_runs_judged_as_different_rls_are_not_compared(tmp_path):
    from gymgate.compare.runs import judged_as

    a, b = RunFolder(tmp_path / "a"), RunFolder(tmp_path / "b")
    for run in (a, b):
        run.root.mkdir()
    a.write_consumer({"profile": profile.load("7ea279ab").to_json()})
    b.write_consumer({"profile": profile.load("pr4061").to_json()})
    with pytest.raises(UsageError, match="judged as RL profile 7ea279ab and the candidate .* as pr4061"):
        judged_as(a, b)
    assert judged_as(a, b, broken=(False, True)).name == "7ea279ab"  # a BROKEN side judged nothing
    assert judged_as(b, b).name == "pr4061"
    assert profile.consumer_name({}) == "7ea279ab"  # a run from before profiles: RL at 7ea279ab


def test_changes_rl_trains_on_come_first_and_say_so():
    from gymgate.compare.observation import CONTRACT, Change
    from gymgate.compare.runs import ChangeGroup
    from gymgate.report.grouping import bundle_changes

    def group(field: str) -> ChangeGroup:
        made = ChangeGroup(field, Change(field, 1, 2, CONTRACT))
        made.paths.append("mcqa:accepted")
        return made

    bundles = bundle_changes([group("result.response.usage.total_tokens"), group("result.reward")])
    assert [(b.fields, b.use) for b in bundles] == [
        (["result.reward"], profile.TRAINS),
        (["result.response.usage.total_tokens"], profile.LOGS),
    ]
    assert "(RL trains on it)" in bundles[0].line("0.6.0", "0.7.0", False, ["mcqa:accepted"])
