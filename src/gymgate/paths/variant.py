"""An answer's variants: each path whose model says something run again with its answer written in another form
(gymgate.variants), once per selected form that fits it. The original path is the variant's oracle, so a variant
carries it whole (acceptance/path.py applies the form again to the fed row and reads or runs the original;
acceptance/variant.py judges the variant against it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gymgate.pathid import PathId
from gymgate.paths.spec import VARIANT, PathSpec
from gymgate.variants import DEFAULT
from gymgate.variants.forms import selected
from gymgate.variants.known import defects


def variant_paths(originals: Iterable[PathSpec], selection: str = DEFAULT) -> list[PathSpec]:
    """From an environment's hand-written and replayed paths, in their order, form by form."""
    forms = selected(selection)
    if forms:
        defects()  # the reviewed known defects are checked before anything runs: a bad entry is a usage error
    found: list[PathSpec] = []
    for original in originals:
        if original.fault is not None or original.variant_of is not None or original.unreplayable:
            continue  # a fault path's answer is its accepted path's; a recording that cannot run has no oracle
        for form in forms:
            # A hand-written case's row is read from the running Gym: a form that reads the row fits it for now
            # and is applied again to the row the path is fed (acceptance/path.py).
            script = form.apply(original.script, original.row.data)
            if script is None:
                continue
            name = PathId.named(original.env.name, "variant", form=form.name, original=original.name).mode
            found.append(
                replace(
                    original,
                    id=PathId.of(original.env.name, name),
                    script=replace(script, mode=name),
                    expect={},
                    tool_outputs=None,  # what the tools answer is its original's business; the verdict is judged
                    recorded=None,
                    origin=VARIANT,
                    variant_of=original,
                    form=form,
                )
            )
    return found
