"""Variants that disagree with their original, from a run's records: the form, whether a reviewed entry knows it
(gymgate.variants.known), and both answers and both verdicts side by side — what a run alone and a comparison show
of the forms a verifier gets wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymgate.runfolder import PathRecord

KNOWN = "known defect"


@dataclass(frozen=True)
class Disagreement:
    path: str
    why: str
    known: str  # the reviewed entry's reason, or "" (news)
    original: dict[str, Any]
    variant: dict[str, Any]
    answers: dict[str, str]

    @property
    def label(self) -> str:
        return f"disagrees ({KNOWN})" if self.known else "disagrees"


def disagreements(records: list[PathRecord]) -> dict[str, Disagreement]:
    """Every variant that did not come to its original's verdict, by path."""
    found = {}
    for record in sorted(records, key=lambda r: r.path):
        variant = record.section("variant")
        if not variant or variant.get("agrees") is not False:
            continue
        found[record.path] = Disagreement(
            record.path,
            str(variant.get("why", "")),
            str((variant.get("known") or {}).get("reason", "")),
            dict(variant.get("original") or {}),
            dict(variant.get("variant") or {}),
            dict(variant.get("answers") or {}),
        )
    return found


def known_reason(record: PathRecord) -> str:
    """What a run alone says on a known defect's row (it passes there)."""
    known = record.section("variant").get("known") or {}
    return f"{KNOWN}: {known.get('reason', '')}" if known else ""


@dataclass(frozen=True)
class VariantTable:
    """What report.md and report.html show of a comparison's variants: a row per variant that disagrees on some
    ref (a cell per ref, the comparison's category), and the candidate's disagreements in detail."""

    labels: list[str]
    rows: list[tuple[str, list[str], str]]  # path, a cell per ref, category
    details: list[Disagreement]


def variant_table(sides: list[tuple[str, list[PathRecord]]], categories: dict[str, str]) -> VariantTable:
    """`sides`: each ref's label and records, the candidate last; `categories`: each path's category."""
    rows = [(path, cells, categories.get(path, "")) for path, cells in variant_columns(sides)]
    details = list(disagreements(sides[-1][1]).values()) if sides else []
    return VariantTable([label for label, _ in sides], rows, details)


def variant_columns(sides: list[tuple[str, list[PathRecord]]]) -> list[tuple[str, list[str]]]:
    """One row per variant path that disagrees on some side, one cell per side: agrees (it came to its original's
    verdict), disagrees (known), its outcome where it was not judged against its original (an ERROR, a SKIP), or
    "—" where that side has no such path."""
    found = [({r.path: r for r in records}, disagreements(records)) for _, records in sides]
    paths = sorted({path for _, against in found for path in against})
    return [(path, [_cell(every.get(path), against.get(path)) for every, against in found]) for path in paths]


def _cell(record: PathRecord | None, disagreement: Disagreement | None) -> str:
    if disagreement is not None:
        return disagreement.label
    if record is None:
        return "—"
    return "agrees" if record.section("variant").get("agrees") is True else str(record.outcome)
