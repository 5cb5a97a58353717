"""Which units a dispatch sends (gymgate/remote/plan.py): a ref per unit; shards only when slots outnumber refs."""

from __future__ import annotations

from gymgate.remote.plan import Unit, units
from gymgate.shards.plan import Shard


def test_a_ref_per_unit_when_the_cluster_has_no_more_slots_than_refs():
    assert units(["0.4.0", "0.7.0"], slots=2, environments=7) == [Unit("0.4.0"), Unit("0.7.0")]
    assert units(["0.4.0", "0.7.0"], slots=1, environments=7) == [Unit("0.4.0"), Unit("0.7.0")]  # they queue
    assert units([], slots=4, environments=7) == []


def test_spare_slots_split_each_ref_into_shards_but_never_more_than_its_environments():
    found = units(["0.7.0"], slots=3, environments=7)
    assert [u.shard for u in found] == [Shard(1, 3), Shard(2, 3), Shard(3, 3)]
    assert len(units(["0.7.0"], slots=16, environments=2)) == 2
    assert len(units(["0.4.0", "0.7.0"], slots=5, environments=7)) == 4  # two shards each


def test_a_units_command_is_the_ref_judged_alone_and_its_name_is_readable():
    unit = Unit("0.7.0", Shard(2, 3))
    assert unit.argv(["--env", "mcqa"]) == [
        *("accept", "--gym-ref", "0.7.0", "--no-baseline", "--shard", "2/3"),
        *("--env", "mcqa"),
    ]
    assert unit.name == "unit-0.7.0-2of3-a1" and unit.again().name == "unit-0.7.0-2of3-a2"
    assert Unit("../Gym checkout").name == "unit-.._Gym_checkout-a1"
