"""Where Gym refs become pins: a user's --gym-ref string resolved to one concrete, hashed Gym source."""

from gymgate.refs.resolve import resolve_ref
from gymgate.refs.source import GymSource

__all__ = ["GymSource", "resolve_ref"]
