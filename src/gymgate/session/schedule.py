"""An xdist scheduler that keeps each environment's paths on the worker the plan names.

It is LoadScope scheduling with the scope taken from the path's environment; a scope whose planned
owner is gone (a crashed worker, or more workers than environments) may go to any worker.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

from gymgate.pathid import PathId
from gymgate.session.plan import plan
from gymgate.shards.plan import load_costs

SELFTEST_ENV = "mcqa"  # gymgate's self-tests run on mcqa's Gym


def env_of(nodeid: str) -> str:
    path = PathId.in_node(nodeid)
    if path is not None:
        return path.env
    if "selftest.py" in nodeid:
        return SELFTEST_ENV
    return nodeid


class EnvScheduling(LoadScopeScheduling):
    def __init__(self, config, log=None):
        super().__init__(config, log)
        self.costs = load_costs()  # read once: every assignment asks for the plan

    def _split_scope(self, nodeid: str) -> str:
        return env_of(nodeid)

    def _owner_plan(self) -> dict[str, str]:
        scopes = sorted({env_of(n) for n in self.collection or []})
        return plan(scopes, len(self.registered_collections), self.costs)

    def _assign_work_unit(self, node) -> None:
        if not self.workqueue:
            return
        owners = self._owner_plan()
        live = {n.gateway.id for n in self.nodes}
        for scope in list(self.workqueue):
            owner = owners.get(scope)
            if owner == node.gateway.id or owner not in live:
                work_unit = self.workqueue.pop(scope)
                self.assigned_work.setdefault(node, {})[scope] = work_unit
                collection = self.registered_collections[node]
                node.send_runtest_some([collection.index(n) for n, done in work_unit.items() if not done])
                return

    def remove_node(self, node):
        """A crashed worker's test is done (it crashed), not work to hand the next worker: xdist's LoadScope
        would re-queue it and crash every replacement in turn. The rest of its scopes go back to the queue."""
        workload = self.assigned_work.pop(node)
        pending = [n for unit in workload.values() for n, done in unit.items() if not done]
        if not pending:
            return None
        crashitem = pending[0]
        for unit in workload.values():
            if crashitem in unit:
                unit[crashitem] = True
        self.workqueue.update({scope: unit for scope, unit in workload.items() if not all(unit.values())})
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem
