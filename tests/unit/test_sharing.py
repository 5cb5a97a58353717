"""Which environments share a Gym instance, and which of its servers each one's paths depend on."""

from __future__ import annotations

from gymgate.services.sharing import Instance, pack

OWN = {
    "a": frozenset({"a", "a_agent"}),
    "b": frozenset({"b", "b_agent"}),
    "c": frozenset({"c", "judge"}),
    "d": frozenset({"d", "judge"}),  # names the same server as c: Gym would merge the two into one
    "e": frozenset(),
}


def test_environments_are_dealt_first_fit_up_to_the_bound():
    instances = pack(["a", "b", "c", "e"], 2, OWN.__getitem__)
    assert [i.members for i in instances] == [["a", "b"], ["c", "e"]]
    assert [i.key for i in instances] == ["a+1", "c+1"]
    assert all(i.shared for i in instances)


def test_one_per_instance_is_gyms_own_way():
    instances = pack(["a", "b", "c"], 1, OWN.__getitem__)
    assert [i.members for i in instances] == [["a"], ["b"], ["c"]]
    assert [i.key for i in instances] == ["a", "b", "c"] and not any(i.shared for i in instances)


def test_environments_naming_the_same_server_never_share():
    instances = pack(["c", "d", "a"], 8, OWN.__getitem__)
    assert [i.members for i in instances] == [["c", "a"], ["d"]]


def test_a_path_depends_on_its_own_servers_and_the_shared_ones_never_a_neighbours():
    instance = Instance(["a", "b"], {"a": OWN["a"], "b": OWN["b"]})
    servers = [{"name": n} for n in ("a", "a_agent", "b", "b_agent", "policy_model", "head_server")]
    assert [s["name"] for s in instance.servers_of("a", servers)] == ["a", "a_agent", "policy_model", "head_server"]
    assert [s["name"] for s in instance.servers_of("b", servers)] == ["b", "b_agent", "policy_model", "head_server"]
