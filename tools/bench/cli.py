"""The command line: the bench named is measured, its figures written to docs/benchmarks/<what>-<label>.json and its
section of docs/benchmarks.md rewritten (and printed). The choices and the list in --help come from the registry."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import textwrap
import time

from .common import publish
from .registry import BENCHES, Bench, Options, find

OVERVIEW = (
    "Benchmarks (never timed tests). Writes docs/benchmarks/<what>-<pin>.json and rewrites that section of "
    "docs/benchmarks.md. Figures are medians over --repeats runs; the machine is noisy, so compare ratios rather "
    "than single numbers."
)


def listing(bench: Bench) -> str:
    """One bench in --help: its name, what it measures, the options it takes."""
    text = bench.description + (f" {bench.every_env.description}" if bench.every_env else "")
    text += f" [{', '.join(bench.options)}]" if bench.options else ""
    return textwrap.fill(text, width=118, initial_indent=f"  {bench.name:<11}", subsequent_indent=" " * 13)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench",
        description=textwrap.fill(OVERVIEW, width=118),
        epilog="benches (WHAT):\n" + "\n".join(listing(bench) for bench in BENCHES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("what", metavar="WHAT", choices=[bench.name for bench in BENCHES], help="the bench: below")
    parser.add_argument("--pin", default="0.4.0")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default="1,auto", help="paths: comma-separated -n settings to compare")
    parser.add_argument("--baseline", default="0.4.0", help="compare: the baseline ref (all: none unless given)")
    parser.add_argument(
        "--env-set",
        default="default",
        help="fidelity, variants: `all` for every runnable environment; variants: a set's name",
    )
    parser.add_argument(
        "--pins", default="", help="fidelity --env-set all, faults, variants: comma-separated pins (default: every)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    bench = find(args.what)
    if args.env_set == "all" and bench.every_env is not None:
        bench = bench.every_env
    for name, value in bench.environment:
        os.environ.setdefault(name, value)
    options = Options(
        pin=args.pin,
        repeats=args.repeats,
        baseline=args.baseline,
        workers=args.workers.split(","),
        pins_given=args.pins,
        given_baseline=args.baseline if "--baseline" in argv else None,
        env_set=args.env_set,
    )
    data = {
        "pin": args.pin,
        "repeats": args.repeats,
        "host": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d"),
    }
    fields = {"name": bench.name, **options.fields()}
    command = "nox -s bench -- " + bench.command.format(**fields)
    figures = bench.measure(*(getattr(options, name) for name in bench.takes))
    if bench.top_level:
        data.update(figures)
    else:
        data[bench.key or bench.name] = figures
    section = bench.render(*(getattr(options, name) for name in bench.shows), data, command)
    publish(bench.name, bench.label.format(**fields), data, section)
    print(section)
    return 0
