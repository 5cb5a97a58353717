"""Whether one ref did the same thing every time it ran a path: its attempts (in the same Gym and in fresh ones)
diffed with each other by the same full-observation diff that compares refs.

gymgate's endpoint, rows and checks are deterministic, so attempts of one path on one Gym that differ in anything
but the declared nondeterministic values (nondeterministic.toml) show a Gym that does not do the same thing twice
— what an RL framework trains on. Two kinds, one finding:
- flaky: some attempt passed and some did not (harness errors aside);
- nondeterministic: attempts that ran to their end (PASS or FAIL) differ in outcome, failures or any observed value.
Attempts that never passed and disagree only on how they failed (a FAIL, then a timeout) are neither: the path
never passed, and the first informative attempt judges it (gymgate/verdict.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymgate.compare.observation import diff, reviewed_rules, rules, side_by_side
from gymgate.outcomes import FAIL, PASS
from gymgate.runfolder import PathRecord
from gymgate.verdict import HARNESS_ERROR, label

OUTCOME, FAILURES = "outcome", "failures"  # the two fields of an attempt beyond its observation


@dataclass(frozen=True)
class Disagreement:
    """The first two attempts of one ref that differ, and their first differing value side by side."""

    first: int  # 1-based attempt numbers, in the order the attempts ran
    other: int
    field: str
    values: tuple[Any, Any]
    differing: int  # how many values differ between the two attempts
    outcomes: tuple[str, str]
    then: tuple[str, tuple[Any, Any]] | None = None  # the next differing value, shown after a differing outcome

    @property
    def flaky(self) -> bool:
        return (self.outcomes[0] == PASS) != (self.outcomes[1] == PASS)

    def line(self, side: str) -> str:
        shown = [(self.field, self.values), *([self.then] if self.then else [])]
        parts = []
        for field, values in shown:
            a, b = side_by_side(*values, limit=80)
            parts.append(f"attempt {self.first} {field} = {a} vs attempt {self.other} {field} = {b}")
        more = self.differing - len(shown)
        return (
            f"nondeterministic on the {side}: " + "; ".join(parts) + (f" (+{more} more differing)" if more > 0 else "")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "attempts": [self.first, self.other],
            "field": self.field,
            "values": list(self.values),
            "differing": self.differing,
            "outcomes": list(self.outcomes),
            "flaky": self.flaky,
        }


def disagreement(attempts: list[PathRecord]) -> Disagreement | None:
    """The first disagreement among one ref's attempts of a path, or None when they agree."""
    judged = [(n, r) for n, r in enumerate(attempts, 1) if label(r) != HARNESS_ERROR]
    passed = [(n, r) for n, r in judged if r.outcome == PASS]
    other = [(n, r) for n, r in judged if r.outcome != PASS]
    if passed and other:  # flaky
        (n, a), (m, b) = sorted([passed[0], other[0]], key=lambda x: x[0])
        found = _differences(a, b)
        then = next((f for f in found if f[0] != OUTCOME), None)
        outcomes = (a.outcome, b.outcome)
        return Disagreement(n, m, OUTCOME, outcomes, max(len(found), 1), outcomes, then)
    ended = [(n, r) for n, r in judged if r.outcome in (PASS, FAIL) and r.observed and not r.missing]
    for (n, a), (m, b) in ((ended[0], x) for x in ended[1:]):
        found = _differences(a, b)
        if found:
            field, values = found[0]
            return Disagreement(n, m, field, values, len(found), (a.outcome, b.outcome))
    return None


def _differences(a: PathRecord, b: PathRecord) -> list[tuple[str, tuple[Any, Any]]]:
    """Every differing value of two attempts, the most telling first: outcome, then reward, then the failed checks,
    then every other observed leaf in the diff's order."""
    found: list[tuple[str, tuple[Any, Any]]] = []
    if a.outcome != b.outcome:
        found.append((OUTCOME, (a.outcome, b.outcome)))
    if a.observed and b.observed:
        changes = diff(a.observed, b.observed, rules() + reviewed_rules(a.fidelity, b.fidelity))
        rewards = [c for c in changes if c.field.endswith("reward")]
        found += [(c.field, (c.before, c.after)) for c in rewards]
        failures = sorted(f.line() for f in a.failures), sorted(f.line() for f in b.failures)
        if failures[0] != failures[1]:
            found.append((FAILURES, failures))
        found += [(c.field, (c.before, c.after)) for c in changes if c not in rewards]
    return found
