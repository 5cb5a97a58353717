"""Which units a dispatch sends (gymgate/remote/plan.py): a ref per unit; shards only when slots outnumber refs."""

from __future__ import annotations

from gymgate.remote.plan import Unit, units
from gymgate.shards.plan import Shard


def test_a_unit_per_ref_of_several_each_running_the_paths_all_of_them_plan():
    both = ("0.4.0", "0.7.0")
    assert units(list(both), slots=2, environments=7) == [Unit("0.4.0", among=both), Unit("0.7.0", among=both)]
    assert units(list(both), slots=8, environments=7) == units(list(both), slots=1, environments=7)  # they queue
    assert units([], slots=4, environments=7) == []
    assert Unit("0.7.0", among=both).argv(["--env", "mcqa"]) == [
        *("matrix", "--only", "0.7.0", "0.4.0", "0.7.0"),
        *("--env", "mcqa"),
    ]


def test_spare_slots_split_a_ref_asked_alone_into_shards_but_never_more_than_its_environments():
    found = units(["0.7.0"], slots=3, environments=7)
    assert [u.shard for u in found] == [Shard(1, 3), Shard(2, 3), Shard(3, 3)]
    assert len(units(["0.7.0"], slots=16, environments=2)) == 2
    assert units(["0.7.0"], slots=1, environments=7) == [Unit("0.7.0")]


def test_a_units_command_is_the_ref_judged_alone_and_its_name_is_readable():
    unit = Unit("0.7.0", Shard(2, 3))
    assert unit.argv(["--env", "mcqa"]) == [
        *("accept", "--gym-ref", "0.7.0", "--no-baseline", "--shard", "2/3"),
        *("--env", "mcqa"),
    ]
    assert unit.name == "unit-0.7.0-2of3-a1" and unit.again().name == "unit-0.7.0-2of3-a2"
    assert Unit("../Gym checkout").name == "unit-.._Gym_checkout-a1"


def test_a_unit_travels_as_json_and_comes_back_the_same():
    for unit in (Unit("0.7.0", Shard(2, 3), 2), Unit("0.4.0", among=("0.4.0", "0.7.0"))):
        assert Unit.from_json(unit.to_json()) == unit
