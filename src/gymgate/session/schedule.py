"""An xdist scheduler that keeps each environment's paths on the worker the plan names.

It is LoadScope scheduling with the scope taken from the path's environment; a scope whose planned
owner is gone (a crashed worker, or more workers than environments) may go to any worker.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

from gymgate.pathid import PathId
from gymgate.session.owners import plan, run_costs

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
        self.costs: dict[str, float] | None = None  # from the collection, once: every assignment asks for the plan

    def _split_scope(self, nodeid: str) -> str:
        return env_of(nodeid)

    def _owner_plan(self) -> dict[str, str]:
        nodeids = self.collection or []
        if self.costs is None:
            self.costs = run_costs(p for p in map(PathId.in_node, nodeids) if p is not None)
        return plan(sorted({env_of(n) for n in nodeids}), len(self.registered_collections), self.costs)

    def _takes(self, node, scope: str, owners: dict[str, str]) -> bool:
        owner = owners.get(scope)
        return owner == node.gateway.id or owner not in {n.gateway.id for n in self.nodes}

    def _assign_work_unit(self, node) -> None:
        if not self.workqueue:
            return
        owners = self._owner_plan()
        for scope in list(self.workqueue):
            if self._takes(node, scope, owners):
                work_unit = self.workqueue.pop(scope)
                self.assigned_work.setdefault(node, {})[scope] = work_unit
                collection = self.registered_collections[node]
                node.send_runtest_some([collection.index(n) for n, done in work_unit.items() if not done])
                return

    def _reschedule(self, node) -> None:
        """A worker whose queue holds only other workers' environments has been handed all it will run: it is told
        so now. An xdist worker runs a path only once it knows the next one (or its end), so it would otherwise hold
        its last path, and its Gyms, until the whole queue was handed out (measured: 6.8 s idle, then its last path
        after the other worker's). A scope whose owner crashes goes to the replacement worker xdist starts."""
        if not node.shutting_down and self.workqueue:
            owners = self._owner_plan()
            if not any(self._takes(node, scope, owners) for scope in self.workqueue):
                node.shutdown()
                return
        super()._reschedule(node)

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
