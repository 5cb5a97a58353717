"""Variants that disagree with their original, from a run's records: the form, whether a reviewed entry knows it
(gymgate.variants.known), and both answers and both verdicts side by side — what a run alone and a comparison show
of the forms a verifier gets wrong."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gymgate.runfolder import PathRecord

KNOWN = "known defect"


@dataclass(frozen=True)
class Disagreement:
    path: str
    form: str
    why: str
    known: str  # the reviewed entry's reason, or "" (news)
    original: dict[str, Any]
    variant: dict[str, Any]
    answers: dict[str, str]

    @property
    def label(self) -> str:
        return f"disagrees ({KNOWN})" if self.known else "disagrees"

    def details(self) -> list[str]:
        """Both answers and both verdicts, side by side (markdown)."""
        return [
            f"<details><summary><code>{self.path}</code>: {self.why}</summary>",
            "",
            "| | original | variant |",
            "|---|---|---|",
            f"| answer | {_cell(self.answers.get('original', ''))} | {_cell(self.answers.get('variant', ''))} |",
            f"| verdict | {_cell(json.dumps(self.original))} | {_cell(json.dumps(self.variant))} |",
            *([f"\n{KNOWN}: {self.known}"] if self.known else []),
            "",
            "</details>",
        ]


def disagreements(records: list[PathRecord]) -> dict[str, Disagreement]:
    """Every variant that did not come to its original's verdict, by path."""
    found = {}
    for record in sorted(records, key=lambda r: r.path):
        variant = record.variant
        if not variant or variant.get("agrees") is not False:
            continue
        found[record.path] = Disagreement(
            record.path,
            str(variant.get("form", "")),
            str(variant.get("why", "")),
            str((variant.get("known") or {}).get("reason", "")),
            dict(variant.get("original") or {}),
            dict(variant.get("variant") or {}),
            dict(variant.get("answers") or {}),
        )
    return found


def known_reason(record: PathRecord) -> str:
    """What a run alone says on a known defect's row (it passes there)."""
    known = (record.variant or {}).get("known") or {}
    return f"{KNOWN}: {known.get('reason', '')}" if known else ""


def _cell(text: str) -> str:
    return "<code>" + text.replace("<", "&lt;").replace("|", "\\|").replace("\n", "<br>") + "</code>"


def variant_columns(sides: list[tuple[str, list[PathRecord]]]) -> list[tuple[str, list[str]]]:
    """One row per variant path that disagrees on some side, one cell per side: agrees, disagrees (known), or "—"
    where that side has no such path."""
    found = [({r.path: r for r in records}, disagreements(records)) for _, records in sides]
    paths = sorted({path for _, against in found for path in against})
    return [
        (
            path,
            [
                against[path].label if path in against else ("agrees" if path in every else "—")
                for every, against in found
            ],
        )
        for path in paths
    ]
