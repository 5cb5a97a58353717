"""gymgate on an existing Ray cluster (`--ray-address`): a unit of work is one ref (or one shard of it) run on one
node exactly as a CI machine runs it — its own private loopback Ray, Gyms and endpoint — so every single-host
assumption of a run holds on the node that runs it. The cluster only places units, carries inputs by digest and
brings run folders back; the caller compares and judges as for a local run.

node.py runs on a node (the standard library and gymgate's own standard-library modules only: the cluster's
Python has no gymgate installed; the dispatch ships the package)."""
