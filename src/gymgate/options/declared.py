"""Every option and setting, declared once and in groups: its flag, help, default, the commands that take it, the
GYMGATE_* variable a CI job sets it with, and the flag the in-environment session takes it as. The machinery that
turns these into parsers, pytest options and a child's command line is gymgate.options.machinery.

A flag on the command line always wins over its variable; a variable that cannot be read is a usage error naming
it (exit 2), never ignored. Variables marked `read_below` are read where their value is used (the runs folder, the
cache, the git repository), so they apply to every caller, not only to the command line.
"""

from __future__ import annotations

from pathlib import Path

from gymgate import faults, locations, variants
from gymgate.endpoint.latency import models as latency_models
from gymgate.options.readers import attempts, live_envs, reruns, seconds, workers
from gymgate.options.shapes import SESSION, UP, Group, Option, Variable
from gymgate.rl import profile

REF = ("resolve", "cases list", "case new", "env", "up", "accept")  # commands about one Gym ref
RESOLVING = (*REF, "matrix", "bisect")  # commands that resolve refs
RUNNING = ("up", "accept", "matrix", "bisect")  # commands that start Gyms
JUDGING = ("accept", "matrix", "bisect")  # commands that run paths and judge them
JUDGED_COMMANDS = ("accept", "compare", "merge", "matrix", "bisect")  # commands that end in a verdict
ACKING = ("accept", "matrix", "bisect", "merge", "compare", "ack")  # commands that read acknowledgements
# --gym-tests: none, the run's environments' servers, Gym's core, both (gymgate.gymtests.roots reads them)
GYM_TEST_SCOPES = ("none", "envs", "core", "all")

GROUPS: tuple[Group, ...] = (
    Group(
        "which Gym refs",
        (
            Option(
                "gym_ref",
                ("--gym-ref",),
                "pin name, index version, local path or git SHA",
                REF,
                extra={"required": True},
            ),
            Option(
                "gym_repo",
                ("--gym-repo",),
                "git URL or path SHAs, tags and branches are resolved in (default: the upstream repository)",
                RESOLVING,
                var="GYMGATE_GYM_REPO",
                read_below=True,
            ),
            Option(
                "baseline",
                ("--baseline",),
                "compare against this ref (default: the baseline pin)",
                ("accept",),
                var="GYMGATE_BASELINE",
                extra={"metavar": "REF"},
            ),
            Option(
                "no_baseline",
                ("--no-baseline",),
                "run the ref alone, without a comparison",
                ("accept",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "load",
                ("--load",),
                "also judge both refs under RL's load: each environment's replayable paths rolled out concurrently in "
                "GRPO groups at the levels of gymgate/load/sweep.toml, the model answering after its latency "
                "(--load-latency), baseline and candidate at once; a rollout that differs from its path alone, or a "
                "cost beyond gymgate/load/thresholds.toml, fails (the same ref "
                "as --baseline measures the noise)",
                ("accept",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "load_latency",
                ("--load-latency",),
                "under --load, the model answers each loaded call after this latency model's wait "
                "(gymgate/endpoint/latency.toml: a published vLLM serving benchmark's time to first token and per output "
                "token, compressed by its scale; `instant`: at once); default: {default}",
                ("accept", "bisect"),
                default=latency_models()[0],
                var="GYMGATE_LOAD_LATENCY",
                extra={"choices": sorted(latency_models()[1]), "metavar": "MODEL"},
            ),
            Option(
                "gym_tests",
                ("--gym-tests",),
                "also run each ref's own Gym tests against the other ref's code (and against its own, the control): "
                "`envs` (the chosen environments' servers, their agents and the model server), `core` (Gym's core), "
                "`all` or `none`; a test of the baseline that passes there and fails on the candidate fails the gate "
                "until reviewed (default: {default})",
                ("accept", "matrix"),
                default="none",
                var="GYMGATE_GYM_TESTS",
                extra={"choices": GYM_TEST_SCOPES, "metavar": "SCOPE"},
            ),
            Option(
                "refs",
                ("refs",),
                "Gym refs in order, oldest first (default: every pin)",
                ("matrix",),
                extra={"nargs": "*", "metavar": "REF"},
            ),
            Option(
                "only",
                ("--only",),
                "run just this ref of the matrix (nox's per-pin sessions), with the paths the whole matrix plans (the "
                "recordings of every ref), so the report over every ref finds its run: alone when no REFs are listed, not at "
                "all when REFs are listed without it",
                ("matrix",),
                extra={"metavar": "REF"},
                internal=True,
            ),
            Option(
                "good",
                ("--good",),
                "a commit, tag or branch where the paths pass",
                ("bisect",),
                extra={"required": True, "metavar": "REF"},
            ),
            Option(
                "bad",
                ("--bad",),
                "a later commit, tag or branch where they regress",
                ("bisect",),
                extra={"required": True, "metavar": "REF"},
            ),
            Option(
                "gym_test",
                ("--gym-test",),
                "bisect one of Gym's own tests instead of a path: the node id of a test of the good ref (as a report "
                "lists it); each step runs that test, as the good ref wrote it, against the commit's code",
                ("bisect",),
                extra={"metavar": "NODEID"},
            ),
            Option(
                "load_metric",
                ("--load-metric",),
                "bisect a regression under load instead of a path: ENV:METRIC, a metric of gymgate/load/thresholds.toml "
                "or `correctness`; each step is a load comparison of the good ref and the commit, repeated while the "
                "change is not significant either way",
                ("bisect",),
                extra={"metavar": "ENV:METRIC"},
            ),
        ),
    ),
    Group(
        "which paths",
        (
            Option(
                "envs",
                ("--env",),
                "this environment (repeatable; any case; the variable: comma-separated; default: the `default` set)",
                RUNNING,
                var="GYMGATE_ENVS",
                read_below=True,  # read by the command line once --env and --env-set are known (cli._settle)
                session="--env",
                children=(SESSION, UP),
                extra={"action": "append", "metavar": "NAME"},
            ),
            Option(
                "cases",
                ("--cases",),
                "your repository's cases (case files, and a sets.toml), read with gymgate's own (a case of the same "
                "name: yours); `gymgate case new` writes into the first (repeatable; the variable: separated by ':')",
                ("case new", "cases list", *RUNNING),
                type=Path,
                var=locations.CASES_VAR,
                read_below=True,  # read where cases are read (cases/environments.py), in every child too
                extra={"action": "append", "metavar": "DIR"},
            ),
            Option(
                "env_set",
                ("--env-set",),
                "a named set of environments from cases/sets.toml (default: `default`)",
                RUNNING,
                read_below=True,  # the settings file's applies when no --env, --env-set or GYMGATE_ENVS is given (cli)
                extra={"metavar": "SET"},
            ),
            Option(
                "paths",
                ("--paths",),
                "only these paths (repeatable; @retry.txt reads one per line)",
                ("accept", "bisect"),
                extra={"action": "append", "metavar": "ENV:MODE|@FILE"},
            ),
            Option(
                "replay",
                ("--no-replays",),
                "judge only the hand-written cases (default: also replay every rollout the refs record for the selected "
                "environments: data/example_rollouts.jsonl)",
                JUDGING,
                default=True,
                extra={"action": "store_false"},
            ),
            Option(
                "faults",
                ("--faults",),
                "each environment's fault paths (its accepted case with one model call failing as real servers fail, "
                "gymgate/faults/faults.toml), judged on how Gym handles it: `default` (the default set's faults), `all` "
                "(also those that hang known releases until the path's deadline) or `none` (default: {default})",
                JUDGING,
                default=faults.DEFAULT,
                var="GYMGATE_FAULTS",
                extra={"choices": faults.SELECTIONS},
            ),
            Option(
                "variants",
                ("--variants",),
                "each answer's variants (the same answer written in another form, gymgate/variants/forms.toml), judged "
                "against their original on the same Gym: `default` (the default set's forms), `all` or `none` "
                "(default: {default})",
                JUDGING,
                default=variants.DEFAULT,
                var="GYMGATE_VARIANTS",
                extra={"choices": variants.SELECTIONS},
            ),
            Option(
                "selftest",
                ("--selftest",),
                "also run gymgate's own negative tests on the real paths",
                ("accept",),
                default=False,
                extra={"action": "store_true"},
            ),
        ),
    ),
    Group(
        "which RL the verdict speaks for",
        (
            Option(
                "rl_profile",
                ("--rl-profile",),
                "judge as this NeMo RL revision consumes Gym (gymgate/rl/profiles/: where it reads mask_sample, what it "
                "rejects, which result leaves it trains on); default: the newest modelled, {default}",
                JUDGING,
                default=profile.default_name(),
                var="GYMGATE_RL_PROFILE",
                session="--rl-profile",
                extra={"choices": profile.names()},
            ),
            Option(
                "rl_recipe",
                ("--rl-recipe",),
                "also judge each path's reward as a training recipe's penalties leave it (the profile's [recipes]: "
                "`nemotron-3-ultra`); a penalty that changes Gym's reward fails the path",
                JUDGING,
                default="",
                var="GYMGATE_RL_RECIPE",
                session="--rl-recipe",
                extra={"metavar": "RECIPE"},
            ),
        ),
    ),
    Group(
        "how paths run",
        (
            Option(
                "attempts",
                ("--attempts",),
                "attempts of every path in the same Gym, diffed with each other: a ref that does not do the same thing "
                "twice is nondeterministic (default: {default}; 1 only for a ref run alone, --no-baseline)",
                JUDGING,
                default=2,
                type=attempts,
                var="GYMGATE_ATTEMPTS",
                session="--attempts",
                extra={"metavar": "N"},
            ),
            Option(
                "reruns",
                ("--reruns",),
                "attempts added, in fresh Gym instances, for each path that does not pass on the candidate, on both refs; "
                "mixed outcomes are flaky (default: {default}; 0 disables)",
                ("accept",),
                default=2,
                type=reruns,
                var="GYMGATE_RERUNS",
                extra={"metavar": "N"},
            ),
            Option(
                "path_timeout",
                ("--path-timeout",),
                "seconds one rollout may take; past it the path is an ERROR (gym, timeout) and its Gym is torn down "
                "(default: {default:g}). A bump's candidate runs each path under its own deadline, derived from what the "
                "baseline measured for it (acceptance/limits.py), capped by this",
                JUDGING,
                default=180.0,
                type=seconds,
                session="--path-timeout",
            ),
            Option(
                "spinup_timeout",
                ("--spinup-timeout",),
                "seconds one Gym may take to start (default: {default:g})",
                RUNNING,
                default=600.0,
                type=seconds,
                session="--spinup-timeout",
                children=(SESSION, UP),
            ),
            Option(
                "stop_timeout",
                ("--stop-timeout",),
                "seconds one Gym may take to stop gracefully; past it the Gym is killed and the lifecycle check fails "
                "(default: {default:g})",
                RUNNING,
                default=60.0,
                type=seconds,
                session="--stop-timeout",
                children=(SESSION, UP),
            ),
            Option(
                "workers",
                ("-n", "--workers"),
                "pytest-xdist workers: auto (one per core), N, or 0 for none (default: {default})",
                JUDGING,
                default="auto",
                type=workers,
                var="GYMGATE_WORKERS",
            ),
            Option(
                "max_envs",
                ("--max-envs",),
                "at most N environments' Gyms up at once (shared between the workers); the others start in waves, each as "
                "an earlier one's paths are done (default: {default}: each Gym holds ~1 GiB, docs/benchmarks.md)",
                JUDGING,
                default=10,
                type=live_envs,
                var="GYMGATE_MAX_ENVS",
                session="--max-envs",
                extra={"metavar": "N"},
            ),
            Option(
                "share",
                ("--envs-per-gym",),
                "at most N environments in one Gym instance (one Gym actor, head and model server for them, as RL's NemoGym "
                "actor hosts them; environments whose configs name the same server never share). A shared instance that "
                "fails to start or is torn down starts each member again alone, and a path whose attempt errs in a shared "
                "instance is run again alone before it is judged (default: {default})",
                JUDGING,
                default=8,
                type=live_envs,
                var="GYMGATE_ENVS_PER_GYM",
                session="--envs-per-gym",
                extra={"metavar": "N"},
            ),
            Option(
                "shard",
                ("--shard",),
                "run only shard K of N of the environments (balanced by shards/costs.toml); `gymgate merge` combines the "
                "shard runs of each ref into one",
                ("accept",),
                default="",
                extra={"metavar": "K/N"},
            ),
        ),
    ),
    Group(
        "where it runs and what it keeps",
        (
            Option(
                "cache_dir",
                ("--cache-dir",),
                "environments, resolved refs and git mirrors (default: ~/.cache/gymgate)",
                RESOLVING,
                type=Path,
                var=locations.CACHE_VAR,
                read_below=True,
            ),
            Option(
                "runs_dir",
                ("--runs-dir",),
                "where run folders go (default: runs/ in the checkout; installed: .gymgate/runs beside gymgate.toml, or here)",
                ("case new", "cases list", *RUNNING, "merge", "ack"),
                type=Path,
                var="GYMGATE_RUNS",
                read_below=True,
            ),
            Option(
                "cache",
                ("--no-cache",),
                "run every ref afresh, even when a stored clean run has exactly the same inputs (default: serve it)",
                JUDGING,
                default=True,
                extra={"action": "store_false"},
            ),
            Option(
                "reuse_since",
                ("--reuse-since",),
                "also serve a complete stored run with exactly the same inputs that started at or after this time (seconds "
                "since the epoch) whatever its verdict: nox's matrix sessions pass their invocation's start, so the report "
                "over every ref reads the runs the per-pin sessions just made, red ones too (default: only clean runs)",
                ("matrix",),
                default=0.0,
                type=float,
                extra={"metavar": "EPOCH"},
                internal=True,
            ),
            Option(
                "ray_address",
                ("--ray-address",),
                "run each ref on an existing Ray cluster (what ray.init takes: HOST:PORT, ray://HOST:10001, auto): every "
                "node with a `gymgate` resource runs units of this command, building the pins' environments itself; the "
                "reports are written here as for a local run (default: run here)",
                JUDGING,
                default="",
                var="GYMGATE_RAY_ADDRESS",
                extra={"metavar": "ADDR"},
            ),
            Option(
                "ray_python",
                ("--ray-python",),
                "the Python the dispatch's Ray driver runs with: its Ray and Python must be the cluster's (default: the "
                "environment of the newest pin)",
                JUDGING,
                default="",
                var="GYMGATE_RAY_PYTHON",
                extra={"metavar": "PYTHON"},
            ),
            Option(
                "out",
                ("--out",),
                "folder the reports are written to (default: runs/<command>-<stamp>; compare: the candidate run)",
                ("matrix", "bisect", "compare"),
                type=Path,
            ),
        ),
    ),
    Group(
        "reviews and reports",
        (
            Option(
                "acks",
                ("--acks",),
                "your repository's reviewed acknowledgements, read with gymgate's own (yours win); `gymgate ack` "
                "writes into the first (repeatable; the variable: separated by ':')",
                ACKING,
                type=Path,
                var="GYMGATE_ACKS",
                read_below=True,  # read by the command line once --acks is known (cli._settle)
                extra={"action": "append", "metavar": "DIR"},
            ),
            Option(
                "review",
                ("--review",),
                "walk each unacknowledged change (before/after, its paths, what reviewed steps say of it) and ask: "
                "accept with a reason, or skip; the file keeps your comments and order",
                ("ack",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "shipped_acks",
                ("--no-shipped-acks",),
                "leave out gymgate's own reviews of Gym's releases (acks/ it ships): only --acks apply",
                ACKING,
                default=True,
                extra={"action": "store_false"},
            ),
            Option(
                "json",
                ("--json",),
                "print the verdict as JSON on stdout (accept, compare, merge: results.json's summary), the verdict view "
                "on stderr with the progress",
                JUDGED_COMMANDS,
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "verbose",
                ("-v", "--verbose"),
                "print the whole report on the terminal (report.md), not the one-screen view",
                ("accept", "merge", "compare"),
                default=False,
                extra={"action": "store_true"},
            ),
        ),
    ),
    Group(
        "this command's own",
        (
            Option("lock", ("lock",), "the uv.lock to read", ("gym-ref-of",), type=Path, extra={"metavar": "UV_LOCK"}),
            Option(
                "list_json",
                ("--json",),
                "print the list as JSON",
                ("cases list",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "name",
                ("name",),
                "the case's name (cases/NAME.toml); also the resources server folder by default",
                ("case new",),
            ),
            Option(
                "server",
                ("--server",),
                "the resources server folder (resources_servers/SERVER), if not NAME",
                ("case new",),
            ),
            Option(
                "config",
                ("--config",),
                "the config file to use, if the server has several (path inside the Gym)",
                ("case new",),
            ),
            Option(
                "row",
                ("--row",),
                "the example row to pin (default: the first)",
                ("case new",),
                default=0,
                type=int,
                extra={"metavar": "N"},
            ),
            Option(
                "install_from",
                ("--from",),
                "where the workflow installs gymgate from (a git URL with a tag or commit; default: where this gymgate "
                "was installed from)",
                ("init",),
                extra={"metavar": "SPEC"},
            ),
            Option(
                "force",
                ("--force",),
                "replace an existing draft of that name",
                ("case new",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "keep_scripts",
                ("--keep-scripts",),
                "rerun an existing draft with the scripts a person finished in it (turns, judge, judge_markers)",
                ("case new",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "version",
                ("version",),
                "a release declared in src/gymgate/envs/cpython.toml, e.g. 3.13.15",
                ("python build",),
            ),
            Option(
                "source",
                ("--source",),
                "the source tarball (default: fetched from Debian's archive)",
                ("python build",),
                type=Path,
            ),
            Option(
                "sha256",
                ("--sha256",),
                "the tarball's digest, when it is not the one cpython.toml declares",
                ("python build",),
            ),
            Option(
                "requires_python",
                ("requires_python",),
                "e.g. '>=3.13.14'",
                ("python ensure",),
                extra={"metavar": "SPEC"},
            ),
            Option("pins", ("pins",), "pins to relock (default: all)", ("lock",), extra={"nargs": "*"}),
            Option(
                "upgrade",
                ("--upgrade",),
                "let uv pick newer versions within exclude-newer",
                ("lock",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option(
                "runs",
                ("runs",),
                "run folders (merge: the shard runs of one or two refs; shard-costs: finished runs, the median is kept)",
                ("merge", "shard-costs"),
                type=Path,
                extra={"nargs": "+", "metavar": "RUN"},
            ),
            Option(
                "compared",
                ("compared",),
                "a compared candidate run, or BASELINE CANDIDATE (default: the newest compared run in the runs folder)",
                ("ack",),
                type=Path,
                extra={"nargs": "*", "metavar": "RUN"},
            ),
            Option(
                "write",
                ("--write",),
                "write shards/costs.toml (default: print it)",
                ("shard-costs",),
                default=False,
                extra={"action": "store_true"},
            ),
            Option("baseline_run", ("baseline",), "the baseline run folder", ("compare",), type=Path),
            Option("candidate_run", ("candidate",), "the candidate run folder", ("compare",), type=Path),
        ),
    ),
    Group(
        "what the harness hands an in-environment entry point",
        (
            Option(
                "run_dir",
                ("--run-dir",),
                "run folder for results (the session's default: a temp dir)",
                ("unit",),
                session="--run-dir",
                children=(SESSION, UP),
            ),
            Option(
                "spec", ("spec",), "the unit's spec (remote/unit_spec.py), written by the caller", ("unit",), type=Path
            ),
            Option(
                "only_paths",
                ("--path",),
                "only this path id, e.g. mcqa:accepted (repeatable)",
                (),
                session="--path",
                extra={"action": "append"},
            ),
        ),
    ),
)
# Settings only a variable sets: where a Gym's servers start, and how a missing interpreter is provided.
SETTINGS = Group(
    "settings only a variable sets",
    variables=(
        Variable(
            "GYMGATE_LAUNCHER",
            "`fork` (default): Gym's servers and the Gym actors start forked from pre-imported parents, the same "
            "processes in half the time; `exec`: Gym's own start-up exactly, each a fresh interpreter",
            choices=("fork", "exec"),
            default="fork",
        ),
        Variable(
            "GYMGATE_PYTHON_DOWNLOADS",
            "`never` forbids `uv python install` of a missing interpreter (as UV_PYTHON_DOWNLOADS=never does)",
            choices=("never",),
        ),
        Variable(
            "GYMGATE_PYTHON_BUILD",
            "`never` stops with the remedies instead of building a missing interpreter into the cache",
            choices=("never",),
        ),
        Variable(
            "GYMGATE_PYTHON_BUILDS",
            "a shared store of finished CPython builds (another cache's pythons/): copied instead of compiled",
        ),
    ),
)
OPTIONS: tuple[Option, ...] = tuple(o for g in GROUPS for o in g.options)
BY_NAME = {o.name: o for o in OPTIONS}
# What README's table of GYMGATE_* variables lists: every option's variable, and every setting's.
VARIABLES = (*(o for o in OPTIONS if o.var), *SETTINGS.variables)
LAUNCHER, PYTHON_DOWNLOADS, PYTHON_BUILD, PYTHON_BUILDS = SETTINGS.variables
# The variables read where their value is used (read_below), named for those readers.
GYM_REPO_VAR, CACHE_VAR, RUNS_VAR = (BY_NAME[n].var for n in ("gym_repo", "cache_dir", "runs_dir"))
