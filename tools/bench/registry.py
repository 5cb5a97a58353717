"""Every bench, in one ordered list: its name, what it measures, its pair of functions (measure, render) and what
they take from the command line. The command line's choices and its --help come from here."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from . import cluster, environments, gymtests, installed, judging, load, profiles, runs, selections, startup

# Every bench but `faults` measures what it always has, without fault paths (the default set gained them with
# issue 30): the series stay comparable, and the faults bench says what they cost (it is given GYMGATE_FAULTS=none
# too, and names --faults on each of its runs). Likewise the variant paths (issue 31): the variants bench says what
# they cost. Each variable is set unless the environment already says.
QUIET = (("GYMGATE_FAULTS", "none"), ("GYMGATE_VARIANTS", "none"))
NO_FAULTS = (("GYMGATE_FAULTS", "none"),)


@dataclass(frozen=True)
class Options:
    """The command line, as the benches take it: Bench.takes and Bench.shows name these attributes."""

    pin: str
    repeats: int
    baseline: str
    workers: list[str]  # --workers, split
    pins_given: str  # --pins as given: "" for every pin
    given_baseline: str | None  # --baseline where the command line names it, else None (`all`: the ref alone)
    env_set: str = "default"  # --env-set (`all` picks a bench's every_env variant instead)

    @property
    def pins(self) -> list[str]:
        """--pins, or every pin in order."""
        from gymgate.refs.pins import pins_in_order

        return self.pins_given.split(",") if self.pins_given else pins_in_order()

    def fields(self) -> dict[str, object]:
        """What Bench.command and Bench.label may name."""
        return {
            "pin": self.pin,
            "repeats": self.repeats,
            "baseline": self.baseline,
            "pins_option": f" --pins {self.pins_given}" if self.pins_given else "",
            "baseline_option": f" --baseline {self.given_baseline}" if self.given_baseline else "",
            "baseline_to": f"{self.given_baseline}-to-" if self.given_baseline else "",
            "env_set_option": "" if self.env_set == "default" else f" --env-set {self.env_set}",
            "env_set_label": "" if self.env_set == "default" else f"-{self.env_set}",
        }


FLAGS = {  # the option each of Options' attributes comes from, for --help
    "pin": "--pin",
    "repeats": "--repeats",
    "baseline": "--baseline",
    "workers": "--workers",
    "pins": "--pins",
    "given_baseline": "--baseline",
    "env_set": "--env-set",
}


@dataclass(frozen=True)
class Bench:
    """One bench: `measure` returns its figures, `render` its section of docs/benchmarks.md. Both are called with the
    attributes of Options that `takes` and `shows` name, in that order; `render` then gets the data and the command.
    `command` (after `nox -s bench -- `) and `label` are formatted with Options.fields() and the bench's name."""

    name: str
    description: str  # one line for --help
    measure: Callable[..., dict]
    render: Callable[..., str]
    takes: tuple[str, ...] = ("pin", "repeats")  # measure's arguments
    shows: tuple[str, ...] = ("pin",)  # render's arguments before (data, command)
    command: str = "{name} --pin {pin} --repeats {repeats}"  # the command its section names
    label: str = "{pin}"  # docs/benchmarks/<name>-<label>.json, and its section's tag <name>:<label>
    key: str = ""  # the data's entry for the figures: the name unless given
    top_level: bool = False  # measure returns entries of the data itself (services: env, up), not one entry
    environment: tuple[tuple[str, str], ...] = QUIET  # variables set unless the environment already says
    every_env: Bench | None = None  # what it runs with `--env-set all` instead

    @property
    def options(self) -> list[str]:
        """The options it takes, for --help."""
        flags = dict.fromkeys(FLAGS[name] for name in (*self.takes, *self.shows))
        if self.every_env is not None:
            flags["--env-set all"] = None
            flags.update(dict.fromkeys(FLAGS[name] for name in (*self.every_env.takes, *self.every_env.shows)))
        return list(flags)


WITH_BASELINE = {  # a bench of a bump: measure(pin, baseline, repeats), render(pin, baseline, data, command)
    "takes": ("pin", "baseline", "repeats"),
    "shows": ("pin", "baseline"),
    "command": "{name} --pin {pin} --repeats {repeats} --baseline {baseline}",
}

BENCHES: tuple[Bench, ...] = (
    Bench(
        "installed",
        "gymgate installed as a tool from this checkout's wheel (`uv tool install`): the build and install, then "
        "a bump of mcqa judged by the tool and by the checkout, alternated: wall times, and whether they judge alike.",
        installed.bench_installed,
        installed.render_installed,
        **WITH_BASELINE,
        label="{baseline}-to-{pin}",
    ),
    Bench(
        "gym-tests",
        "Gym's own tests across releases (`--gym-tests all`, the default set's servers and Gym's core): each "
        "consecutive pair of pins (`--pins A,B,C` for some), each release's tests over the other's code, nothing "
        "cached: tests judged, excluded and why, newly failing and their reviews, the time per bump.",
        gymtests.bench_gym_tests,
        gymtests.render_gym_tests,
        takes=("pins",),
        shows=(),
        command="{name}{pins_option}",
        label="every",
        every_env=Bench(
            "gym-tests",
            "`--env-set all`: one bump (`--pin B --baseline A`) with every runnable environment's servers.",
            gymtests.bench_gym_tests_every,
            gymtests.render_gym_tests_every,
            takes=("pin", "baseline"),
            shows=("pin", "baseline"),
            command="{name} --env-set all --pin {pin} --baseline {baseline}",
            label="{baseline}-to-{pin}-all",
            key="gym_tests_every",
        ),
    ),
    Bench(
        "services",
        "environment build (cold, warm reuse), all Gym services ready (`gymgate up`), stop, peak memory.",
        environments.bench_services,
        environments.render_services,
        top_level=True,
    ),
    Bench(
        "paths",
        "one pin's fourteen paths through `gymgate accept`, wall time and each stage, per --workers setting "
        "(default `1,auto`, alternated run by run).",
        runs.bench_paths,
        runs.render_paths,
        takes=("pin", "repeats", "workers"),
    ),
    Bench(
        "compare",
        "a bump judged (`accept --gym-ref PIN --baseline B`), from scratch and with the baseline reused.",
        judging.bench_compare,
        judging.render_compare,
        **WITH_BASELINE,
    ),
    Bench(
        "noise",
        "no false alarms: --repeats runs of the same pin, each later run compared with the first (`gymgate "
        "compare`): exit codes, changed fields, flaky and any category other than same-pass / skipped.",
        judging.bench_noise,
        judging.render_noise,
    ),
    Bench(
        "neighbour",
        "a checkout with the pin's dependencies (its sdist plus one changed file) built from the pin's environment "
        "as its neighbour, against the pin's full build, in a fresh gymgate cache.",
        environments.bench_neighbour,
        environments.render_neighbour,
    ),
    Bench(
        "cached",
        "`nox -s accept -- --gym-ref PIN --no-baseline` of an unchanged ref, first run and then served from the cache.",
        environments.bench_cached,
        environments.render_cached,
    ),
    Bench(
        "matrix",
        "`gymgate matrix` over every pin, once with nothing cached (each ref's session) and then fully cached.",
        judging.bench_matrix,
        judging.render_matrix,
        takes=("repeats",),
        shows=(),  # its section is tagged matrix:all, its json and the tag looked for matrix:<pin>: as before the split
    ),
    Bench(
        "bisect",
        "`gymgate bisect` over 64 commits built from the pin's sdist, one of which breaks mcqa's verifier.",
        judging.bench_bisect,
        judging.render_bisect,
        takes=("pin",),
    ),
    Bench(
        "pins",
        "two pins' fourteen paths in one bench run, alternated run by run (warm environments): each pin's wall "
        "time and the ratio (`--pin 0.7.0 --baseline 0.4.0`).",
        runs.bench_pins,
        runs.render_pins,
        **WITH_BASELINE,
    ),
    Bench(
        "bump",
        "a bump from a cold gymgate cache with the interpreters present (`--pin 0.7.0 --baseline 0.4.0`): where "
        "the time goes (both environments built, the baseline run, the candidate run, the comparison).",
        environments.bench_bump,
        environments.render_bump,
        **WITH_BASELINE,
    ),
    Bench(
        "attempts",
        "what the second attempt of every path (in the same Gym) costs: one pin's fourteen paths with "
        "--attempts 1 and 2, alternated in one bench run; the ratio of the medians.",
        runs.bench_attempts,
        runs.render_attempts,
    ),
    Bench(
        "hang",
        "a Gym whose verifier never returns (structured_outputs, built from the pin's sdist) judged end to end "
        "against the pin with the default reruns: the per-path deadlines derived from the baseline decide it.",
        judging.bench_hang,
        judging.render_hang,
    ),
    Bench(
        "replays",
        "the default set with its recordings replayed and without (`--no-replays`), alternated: what the replays "
        "cost in wall time.",
        runs.bench_replays,
        runs.render_replays,
    ),
    Bench(
        "startup",
        "where a default-set run's CPU goes (`accept --no-baseline --no-cache`): CPU seconds by kind of process "
        "(Gym's servers by kind, Ray, the harness), the run's wall time and the paths' own time.",
        startup.bench_startup,
        startup.render_startup,
    ),
    Bench(
        "fidelity",
        "every pin's default set with every recording replayed (`gymgate matrix --no-cache`): per release and "
        "environment, how many recordings reproduce and why the others do not.",
        judging.bench_fidelity,
        judging.render_fidelity,
        takes=(),
        shows=(),
        command="{name}",
        label="all",
        every_env=Bench(
            "fidelity",
            "`--env-set all`: each pin alone with every runnable environment (`--pins A,B` for some), totals per "
            "release.",
            judging.bench_fidelity_every,
            judging.render_fidelity_every,
            takes=("pins",),
            shows=(),
            command="{name} --env-set all{pins_option}",
            label="every",
            key="fidelity_every",
        ),
    ),
    Bench(
        "all",
        "every runnable environment (`accept --env-set all --no-cache`) of the pin alone, or of the bump from "
        "--baseline where given: wall time, peak memory (PSS and RSS) of every process the run started, the paths' "
        "outcomes and each environment's replay fidelity.",
        runs.bench_all,
        runs.render_all,
        takes=("pin", "given_baseline"),
        shows=("pin", "given_baseline"),
        command="{name} --pin {pin}{baseline_option}",
        label="{baseline_to}{pin}",
    ),
    Bench(
        "faults",
        "what each fault does on each release (`accept --faults all --no-baseline`, the default set's "
        "environments; `--pins A,B` for some): how Gym handled it, the attempts the endpoint saw, the path's "
        "outcome; then what the default faults cost the newest pin's default set (`--faults none` against "
        "`default`, alternated).",
        selections.bench_faults,
        selections.render_faults,
        takes=("pins", "repeats"),
        shows=(),
        command="{name}{pins_option}",
        label="every",
    ),
    Bench(
        "variants",
        "which forms each release's verifiers get wrong (`accept --variants all --no-baseline`, the default set's "
        "environments; `--pins A,B` for some); then what the default forms cost the newest pin's default set "
        "(`--variants none` against `default`, alternated). `--env-set NAME`: that set's environments instead, no cost "
        "runs (`judges`: every case whose verifier asks a judge).",
        selections.bench_variants,
        selections.render_variants,
        takes=("pins", "repeats", "env_set"),
        shows=(),
        command="{name}{pins_option}{env_set_option}",
        label="every{env_set_label}",
        environment=NO_FAULTS,
        every_env=Bench(
            "variants",
            "`--env-set all`: every runnable environment instead, the default forms only, no cost runs.",
            functools.partial(selections.bench_variants, every_env=True),
            selections.render_variants,
            takes=("pins", "repeats"),
            shows=(),
            command="{name}{pins_option} --env-set all",
            label="every-env",
            environment=NO_FAULTS,
        ),
    ),
    Bench(
        "profiles",
        "which verdicts each RL profile gives (gymgate/rl/profiles/): the pin's default set, its default faults and "
        "forms, judged once under each profile; the paths judged otherwise listed.",
        profiles.bench_profiles,
        profiles.render_profiles,
        takes=("pin",),
        shows=(),
        command="{name} --pin {pin}",
        label="every",
        environment=(),
    ),
    Bench(
        "cluster",
        "`--ray-address` on a local two-node Ray cluster (tools/local_cluster.py): a unit on cold nodes (each "
        "builds gymgate's and the pin's environments itself), then `accept --env mcqa` of the pin here and on the "
        "cluster, alternated: what a unit costs beyond the run it carries; and a two-pin matrix there.",
        cluster.bench_cluster,
        cluster.render_cluster,
    ),
    Bench(
        "load",
        "A/A bumps under load (`accept --gym-ref PIN --baseline PIN --load`, --repeats times, the default set): false "
        "alarms (the gate's promise: none), each metric's noise floor, the load run's time and peak memory.",
        load.bench_load,
        load.render_load,
    ),
    Bench(
        "load-mutants",
        "each load mutant of tests/integration/load_mutants.toml once against the pin (use --pin 0.7.0, the "
        "mutants' sdist): exit, the verdict's figures, time.",
        load.bench_load_mutants,
        load.render_load_mutants,
        command="{name} --pin {pin}",
    ),
    Bench(
        "load-releases",
        "every consecutive pair of --pins (default: every pin) under load (`accept --gym-ref NEWER --baseline OLDER "
        "--load`, the default set): the load verdict's figures per bump.",
        load.bench_load_releases,
        load.render_load_releases,
        takes=("pins",),
        shows=(),
        command="{name}{pins_option}",
        label="all",
    ),
)


def find(name: str) -> Bench:
    (bench,) = (b for b in BENCHES if b.name == name)
    return bench
