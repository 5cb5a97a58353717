"""Benchmarks (never timed tests): `nox -s bench -- WHAT [--pin 0.4.0] [--repeats 3] ...`, which runs
`python -m tools.bench WHAT ...` from the repository's root; `python -m tools.bench --help` lists every WHAT with what
it measures and the options it takes.

Each bench writes docs/benchmarks/<what>-<pin>.json and rewrites that section of docs/benchmarks.md. Figures are
medians over --repeats runs; the machine is noisy, so compare ratios rather than single numbers.

registry.py lists the benches, in order (the Bench entry: name, description, measure, render, the options they take,
the command its section names, its label, its environment); cli.py parses the command line and runs the one named.
The pairs of functions live by family: environments.py, runs.py, startup.py, judging.py, selections.py, cluster.py;
what they share (timing gymgate, a run's memory, medians, a section's table, publishing) in common.py.

Adding a bench: write `bench_NAME(...) -> dict` (the figures) and `render_NAME(..., data, command) -> str` (its
section, tagged `<!-- NAME:LABEL:begin -->`) in the family it belongs to, and add a `Bench("NAME", "what it
measures", family.bench_NAME, family.render_NAME, takes=..., shows=...)` to registry.BENCHES: `takes` and `shows`
name the options the two functions take (the defaults: measure(pin, repeats), render(pin, data, command)).
"""
