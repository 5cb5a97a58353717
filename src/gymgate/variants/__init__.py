"""The same answer in other forms (forms.toml): rewriting rules that keep what a model's answer means and change how
it is written. A variant path runs its original path's rollout with the answer rewritten; the original's reward and
verdict on the same Gym are its oracle (acceptance/variant.py judges it)."""

from gymgate.selection import ALL, DEFAULT, NONE, SELECTIONS  # which forms a run's variants come from (--variants)

__all__ = ["ALL", "DEFAULT", "NONE", "PREFIX", "SELECTIONS", "form_of", "name_of", "original_of"]
PREFIX = "form."  # a variant path's name: form.<form name>.<its original path's name>


def name_of(form: str, original: str) -> str:
    return f"{PREFIX}{form}.{original}"


def original_of(mode: str) -> str:
    """The original path's name a variant path's name carries ("" for a path that is not a variant)."""
    if not mode.startswith(PREFIX):
        return ""
    return mode[len(PREFIX) :].partition(".")[2]


def form_of(mode: str) -> str:
    """The form's name a variant path's name carries ("" for a path that is not a variant)."""
    return mode[len(PREFIX) :].partition(".")[0] if mode.startswith(PREFIX) else ""
