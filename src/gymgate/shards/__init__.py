"""Shards: one ref's environments split across machines (plan.py) and the shard runs combined into one run that
compares, reports and caches like an unsharded one (merge.py)."""
