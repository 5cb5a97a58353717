"""A variant: a path whose model says something, run again with its answer written in another form
(gymgate.variants), once per selected form that fits it. The original is the variant's oracle, so a variant carries
it whole: the form is applied again to the row it is fed, the original's verdict on the same Gym is read from this
run (or the original is run again), and acceptance/variant.py judges the two."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gymgate.cases.environments import Environment
from gymgate.kinds.protocol import CatalogueDetail, Check, PathContext, Planning, Prepared, RunPath
from gymgate.outcomes import ERROR, GYM
from gymgate.pathid import PathId
from gymgate.paths.spec import PathSpec
from gymgate.variants import DEFAULT
from gymgate.variants.forms import Form, catalogue, selected
from gymgate.variants.known import defects

NAME = "variant"


def variant_paths(
    originals: list[PathSpec], selection: str = DEFAULT, rows: Mapping[str, dict] | None = None
) -> list[PathSpec]:
    """From an environment's paths planned so far, in their order, form by form: each that derives from no other
    path and can run here (a fault path's answer is its accepted path's; a recording that cannot run has no
    oracle). `rows`: the case rows the plan could read, by environment (a form that reads the row fits it)."""
    forms = selected(selection)
    if forms:
        defects()  # the reviewed known defects are checked before anything runs: a bad entry is a usage error
    found: list[PathSpec] = []
    for original in originals:
        if original.of is not None or original.cannot_run:
            continue
        for form in forms:
            # A hand-written case's row is read from the running Gym: a form that reads the row fits the row the
            # plan read from the ref, or fits for now, and is applied again to the row the path is fed (prepare).
            row = original.row.data if original.row.data is not None else (rows or {}).get(original.env.name)
            script = form.apply(original.script, row, original.env.session)
            if script is None:
                continue
            pid = PathId.named(original.env.name, NAME, form=form.name, original=original.name)
            found.append(
                replace(
                    original,
                    id=pid,
                    script=replace(script, mode=pid.mode),
                    expect={},
                    tool_outputs=None,  # what the tools answer is its original's business; the verdict is judged
                    recorded=None,
                    of=original,
                    detail=form,
                )
            )
    return found


class VariantKind(CatalogueDetail):
    name = NAME
    catalogue_file = "the form catalogue (gymgate/variants/forms.toml)"

    def plan(self, env: Environment, planned: list[PathSpec], given: Planning) -> list[PathSpec]:
        return variant_paths(planned, given.selection(self.name), given.rows)

    def entries(self) -> tuple[Form, ...]:
        return catalogue()[0]

    def prepare(self, ctx: PathContext, path: PathSpec, fed: dict[str, Any], result, run: RunPath) -> Prepared | None:
        form = path.detail
        script = form.apply(path.of.script, fed, path.env.session)  # a form may read the row
        if script is None:
            result.skip(f"the form {form.name} does not fit this row or its answer")
            return None
        oracle, source = self._original_verdict(ctx, path, result, run)
        if oracle is None:
            return None
        return Prepared(replace(script, mode=path.name), oracle, source, form.feed(fed))

    @staticmethod
    def _original_verdict(ctx: PathContext, path: PathSpec, result, run: RunPath) -> tuple[dict | None, str]:
        """The oracle: the original's verdict on this Gym, from this run's record of it (the original runs first on
        the same worker), else from running the original now, in the same Gym, into the run's originals/. When the
        original cannot be one (it did not run to its end) the variant is an ERROR: nothing to judge it against."""
        from gymgate.acceptance import variant  # noqa: PLC0415 - pin environment only: its checks read numpy arrays

        original = path.of
        record, source = ctx.run.record(original.id), variant.THIS_RUN
        if record is None:  # a --path of the variant alone, or a rerun in a fresh Gym
            record, source = run(original, ctx.run.originals), variant.RUN_AGAIN
        found, why = variant.oracle(record, str(ctx.gym.get("version", "")), path.detail.holds_tool_outputs)
        if found is None:
            blame = record.blame if record.outcome == ERROR and record.blame else GYM
            result.error(blame, f"its original {original.id} cannot be its oracle: {why}")
        return found, source

    verdict_of_original = True

    def judged_as(self, path: PathSpec) -> PathSpec:
        return path.of  # its failure markers are allowed as its original's, its echoed row fields held as its

    def checks(self, path: PathSpec, result, prepared: Prepared, processed: dict) -> list[Check]:
        from gymgate.acceptance import variant  # noqa: PLC0415 - pin environment only: its checks read numpy arrays

        if prepared.oracle is None:  # a script given in its stead (a negative test): nothing to judge it against
            return []
        return [
            (
                variant.VARIANT,
                lambda: variant.judge(
                    result, path, prepared.script, processed["gym_result"], prepared.oracle, prepared.oracle_from
                ),
            )
        ]


KIND = VariantKind()
