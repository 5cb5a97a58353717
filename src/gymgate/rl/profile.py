"""Which NeMo RL a verdict speaks for: one declared profile per RL revision gymgate models (rl/profiles/*.toml), each
fact that differs between revisions with where RL says it. The consumer, the checks and the comparison read the
profile a run was judged with; every report names it. A profile may extend another (`extends`): its tables replace
the other's table by table."""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from gymgate.errors import UsageError

PROFILES_DIR = Path(__file__).with_name("profiles")
# How RL uses a leaf of a path's observation ([leaves]), in the order a report lists them; NOT_READ: no list names it.
TRAINS, ROUTES, LOGS, NOT_READ = "trains", "routes", "logs", "not read"
USES = (TRAINS, ROUTES, LOGS)
USE_WORDS = {
    TRAINS: "RL trains on it",
    ROUTES: "RL routes by it",
    LOGS: "RL only logs it",
    NOT_READ: "RL does not read it",
}
# What a path's record keeps of the profile's decisions (PathRecord.rl): the diagnostic failure markers on a verdict
# the profile's RL trains on (acceptance/checks.check_gym_failure), what a recipe made of the reward (check_rl_reward).
TRAINED_MARKERS, RECIPE = "trained_on_markers", "recipe"
# A run folder from before profiles existed was judged as RL at 7ea279ab (what the consumer modelled then).
BEFORE_PROFILES = "7ea279ab"
FACTS = ("mask_sample", "failure_class", "markers", "stream", "generations", "leaves")  # every table a profile has


@dataclass(frozen=True)
class Recipe:
    """A training recipe's reward penalties (rl/penalties.py): which it turns on (each sets a reward to 0.0), the
    tokens it calls unwanted and its thinking tags, as tokens of gymgate's tokenizer that mean what the recipe's
    ids mean in the tokenizer it was written for."""

    name: str
    penalties: tuple[str, ...]
    unwanted_tokens: tuple[str, ...]
    think_tags: tuple[str, str]
    source: str


@dataclass(frozen=True)
class Profile:
    name: str
    describes: str
    rl_commit: str
    order: int
    mask_read: tuple[str, ...]  # where RL reads mask_sample, in its order of preference
    baseline_excludes_masked: bool  # masked rows are left out of their group's baseline
    rejects_failure_class: bool  # a result with _ng_failure_class is rejected before its reward is read
    trains_on_markers: tuple[str, ...]  # diagnostic failure fields RL trains through (reads none, or only carries)
    stream_tuple: int
    generations: str
    leaves: dict[str, tuple[str, ...]]  # use -> fnmatch patterns over observation leaves
    recipes: dict[str, Recipe] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # fact -> where RL says it
    digest: str = ""  # sha256 over the files it was read from (a run's inputs)

    def masked_at(self, full: dict[str, Any]) -> str:
        """Where RL finds this result's sample masked: the first location of `mask_read` that says true ("" when
        none does: RL trains on it). Whether an explicit false at a preferred location overrules a true at its
        fallback is not known for RL#4061; a true anywhere RL reads counts (the stricter reading)."""
        return next((at for at in self.mask_read if value_at(full, at) not in (None, False, 0)), "")

    def use_of(self, leaf: str) -> str:
        """How RL uses an observation leaf (`result.reward`, `requests.policy.1.temperature`)."""
        for use in USES:
            if any(fnmatch.fnmatchcase(leaf, pattern) for pattern in self.leaves.get(use, ())):
                return use
        return NOT_READ

    def recipe(self, name: str) -> Recipe:
        if name not in self.recipes:
            known = ", ".join(sorted(self.recipes)) or "none"
            raise UsageError(f"RL profile {self.name} declares no recipe {name!r} (it declares: {known})")
        return self.recipes[name]

    def to_json(self) -> dict[str, Any]:
        """What a run folder and a report say of the profile it was judged with."""
        return {"name": self.name, "describes": self.describes, "rl_commit": self.rl_commit, "digest": self.digest}


def value_at(full: dict[str, Any], location: str) -> Any:
    """The value at a dotted location of a result (None where any step is missing or not a dict)."""
    node: Any = full
    for part in location.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def consumer_name(consumer: dict[str, Any]) -> str:
    """Which RL a run folder's rl.json says its paths were judged as (RunFolder.consumer): the profile, and the
    training recipe if one was applied (as RunOptions.consumer says it)."""
    name = str((consumer.get("profile") or {}).get("name") or BEFORE_PROFILES)
    return f"{name}+{consumer['recipe']}" if consumer.get("recipe") else name


def names() -> list[str]:
    """Every profile, oldest first."""
    return sorted((p.stem for p in PROFILES_DIR.glob("*.toml")), key=lambda n: (_read(n)[0].get("order", 0), n))


def default_name() -> str:
    """The newest RL revision modelled."""
    return names()[-1]


@cache
def load(name: str | None = None) -> Profile:
    """The profile `name` (None: the newest). UsageError for an unknown name or a malformed file, naming the key."""
    name = name or default_name()
    data, digest = _read(name)
    try:
        return _profile(name, data, digest)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"RL profile {name} ({PROFILES_DIR / name}.toml): missing or malformed {exc}") from None


def _read(name: str, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    """The profile's tables with what it extends merged under them, and a digest of every file read."""
    path = PROFILES_DIR / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.toml")))
        raise UsageError(f"unknown RL profile {name!r}; gymgate models: {known}")
    if name in seen:
        raise UsageError(f"RL profile {name} extends itself ({' -> '.join((*seen, name))})")
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"RL profile {path} is not valid TOML ({exc})") from None
    digest = hashlib.sha256(raw)
    if "extends" in data:
        base, base_digest = _read(str(data["extends"]), (*seen, name))
        digest.update(base_digest.encode())
        data = {**base, **{k: v for k, v in data.items() if k != "extends"}}
    return data, digest.hexdigest()


def _profile(name: str, data: dict[str, Any], digest: str) -> Profile:
    for fact in FACTS:
        if not isinstance(data.get(fact), dict):
            raise KeyError(f"[{fact}]")
    leaves = data["leaves"]
    unknown = set(leaves) - {*USES, "source"}
    if unknown:
        raise ValueError(f"[leaves] {sorted(unknown)[0]!r} (uses: {', '.join(USES)})")
    return Profile(
        name=str(data["name"]),
        describes=str(data["describes"]),
        rl_commit=str(data["rl_commit"]),
        order=int(data["order"]),
        mask_read=tuple(str(x) for x in data["mask_sample"]["read"]),
        baseline_excludes_masked=bool(data["mask_sample"]["baseline_excludes_masked"]),
        rejects_failure_class=bool(data["failure_class"]["rejects"]),
        trains_on_markers=tuple(str(x) for x in data["markers"]["trains_on"]),
        stream_tuple=int(data["stream"]["tuple"]),
        generations=str(data["generations"]["per_prompt"]),
        leaves={use: tuple(str(p) for p in leaves.get(use, ())) for use in USES},
        recipes={
            key: Recipe(
                key,
                tuple(str(p) for p in recipe["penalties"]),
                tuple(str(t) for t in recipe["unwanted_tokens"]),
                (str(recipe["think_tags"][0]), str(recipe["think_tags"][1])),
                str(recipe["source"]),
            )
            for key, recipe in (data.get("recipes") or {}).items()
        },
        sources={fact: str(data[fact]["source"]) for fact in FACTS},
        digest=digest,
    )
