"""The same answer in other forms (forms.toml): rewriting rules that keep what a model's answer means and change how
it is written. A variant path runs its original path's rollout with the answer rewritten; the original's reward and
verdict on the same Gym are its oracle (acceptance/variant.py judges it)."""

from gymgate.selection import ALL, DEFAULT, NONE, SELECTIONS  # which forms a run's variants come from (--variants)

__all__ = ["ALL", "DEFAULT", "NONE", "SELECTIONS"]
