"""The in-environment half of a run: a pytest session inside a pin's environment (plugin.py, loaded with
`-p gymgate.session.plugin`) that owns the run's private Ray cluster, the model endpoint and the Fleet of Gyms,
runs one test item per rollout path (items.py; gymgate's self-tests in selftest.py) and writes each path's record
into the run folder. Which worker starts which environment (plan.py) and the xdist scheduler that honours it
(schedule.py) live here too. The harness half (harness/) only reads what this half writes."""
