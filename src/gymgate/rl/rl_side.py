"""NeMo RL's own Gym consumer, run on stored Gym results: the RL half of the conformance test (gymgate.rl.conformance).

This file runs as a script in a small venv of its own (torch, numpy, pillow, pydantic, packaging, typing_extensions;
nothing of gymgate): `python -I rl_side.py --rl-repo DIR --inputs FILE --out FILE`. It imports NeMo RL from the
checkout DIR and calls RL's functions on each result as RL's synchronous Gym path does: the actor's postprocess
(`NemoGym._postprocess_nemo_gym_to_nemo_rl_result`, called unbound) and its NaN check, then on the driver
`_tensorize_nemo_gym_result` and `_postprocess_single_nemo_gym_group`, once per result (a group of one) and once
over every result (one group). What RL returns is written as canonical JSON (`canonical`, which gymgate's half
uses too), so the two halves compare value for value.

RL imports far more than those functions use (Ray, vLLM, wandb, tensorboard, ...). Everything but the packages
above is stood in for by an import hook: the few stand-ins RL must get right at import are explicit (`ray.remote`
leaves a class as written; wandb's Histogram and Table record what they were given, which is what RL logs), and any
other module a NeMo RL module imports that is not installed becomes a stand-in whose every attribute is another
stand-in. Once RL is imported the stand-ins are armed: calling one raises (and is reported), so an RL that starts to
use one of them at run time fails loudly instead of comparing a stand-in's dummy value.

The tokenizer is a stand-in too: RL only decodes with it (`batch_decode`) and reads `pad_token_id`; it decodes
gymgate's byte-level ids (0-255 are bytes, the special tokens above; gymgate.endpoint.tokenizer) as gymgate's
tokenizer does, from the table of special tokens the inputs carry.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.abc
import importlib.machinery
import json
import pickle
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# Canonical JSON's markers (dict keys no Gym result uses): an array with its dtype, what a wandb Histogram or Table
# was given, and any other object by its type.
ARRAY, DTYPE, HISTOGRAM, TABLE, OBJECT = "__array__", "__dtype__", "__histogram__", "__table__", "__object__"

# Imported for real before any stand-in is installed, so no stand-in can change how they import.
REAL = ("torch", "numpy", "PIL", "pydantic", "packaging", "typing_extensions")
# Below the 5.12 that nemo_rl.models.policy asserts at import; a local version label says it is no release.
TRANSFORMERS_VERSION = "0.0.0+gymgate.stand.in"
TIMER_PREFIX = "timing/rollout"  # the prefix RL's rollout passes its group postprocess


def canonical(value: Any) -> Any:
    """`value` as plain JSON: a torch tensor or numpy array (or numpy scalar) as {ARRAY: values, DTYPE: name} with
    torch's `torch.` dropped from the dtype's name, a recording stand-in as what it recorded, any other object by
    its type. Both halves write their outputs through this one function."""
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, _StandIn):
        return {OBJECT: f"a stand-in: {value.__module__}:{value.__qualname__}"}
    recorded = getattr(value, "gg_recorded", None)
    if isinstance(recorded, dict):
        return recorded
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return {ARRAY: canonical(value.tolist()), DTYPE: str(value.dtype).removeprefix("torch.")}
    return {OBJECT: f"{type(value).__module__}.{type(value).__qualname__}"}


# -- stand-ins -----------------------------------------------------------------------------------------------------
class StandInCalled(RuntimeError):
    """RL called a stand-in after its import: the comparison cannot speak for that call."""


class _Record:
    """What the stand-ins saw: the modules stood in for, and what RL asked of them at run time."""

    def __init__(self) -> None:
        self.armed = False
        self.modules: list[str] = []
        self.called: list[str] = []
        self.missing: list[str] = []


RECORD = _Record()


class _StandIn(type):
    """The type of every stand-in object. A stand-in is a class, so RL can subclass it, annotate with it, subscript
    it (`Optional[X]`, `X[int]`) and check instances against it; any public attribute is another stand-in. Calling
    one at import (a decorator with arguments, a module-level instance) gives another stand-in; once armed, it
    raises. A class RL derives from a stand-in is RL's own and is instantiated as written."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        made = _stand_in(f"{cls.__qualname__}.{name}", cls.__module__)
        type.__setattr__(cls, name, made)
        return made

    def __getitem__(cls, _item: Any) -> Any:
        return cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if "_gg_stand_in" not in cls.__dict__:
            return super().__call__(*args, **kwargs)
        if RECORD.armed:
            where = f"{cls.__module__}:{cls.__qualname__}"
            RECORD.called.append(where)
            raise StandInCalled(f"RL called {where}, which this venv only stands in for")
        return _stand_in(f"{cls.__qualname__}()", cls.__module__)


def _stand_in(qualname: str, module: str) -> type:
    made = _StandIn(qualname.rpartition(".")[2], (), {"_gg_stand_in": True, "__module__": module})
    made.__qualname__ = qualname
    return made


class _StandInModule(types.ModuleType):
    """A module stood in for: a package (its submodules import), any public attribute a stand-in."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        made = _stand_in(name, self.__name__)
        setattr(self, name, made)
        return made


def _remote(*args: Any, **kwargs: Any) -> Any:
    """`ray.remote`, as RL applies it at import (`@ray.remote` or `@ray.remote(...)`): the class stays as written,
    so its methods can be called unbound."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return args[0]
    return lambda target: target


class _Histogram:
    """wandb.Histogram: RL logs a histogram per metric family; the values it was drawn from are what compare."""

    def __init__(self, sequence: Any = None, **options: Any) -> None:
        self.gg_recorded = {HISTOGRAM: canonical(list(sequence) if sequence is not None else None)}
        if options:
            self.gg_recorded["options"] = canonical(options)


class _Table:
    """wandb.Table: RL logs each agent's full results as one; its rows are what compare."""

    def __init__(self, columns: Any = None, data: Any = None, **options: Any) -> None:
        self.gg_recorded = {TABLE: {"columns": canonical(columns), "data": canonical(data)}}
        if options:
            self.gg_recorded[TABLE]["options"] = canonical(options)


# Stood in for even when installed, each with what RL must find in it at import. Their submodules are stand-ins too.
EXPLICIT: dict[str, dict[str, Any]] = {
    "ray": {"remote": _remote},
    "wandb": {"Histogram": _Histogram, "Table": _Table},
    "transformers": {"__version__": TRANSFORMERS_VERSION},
    "torch.utils.tensorboard": {},  # real torch's imports the tensorboard package at import, absent here
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves a stand-in module for each name `decide` gives the attributes of (None: not this finder's)."""

    def __init__(self, decide: Any) -> None:
        self.decide = decide

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if self.decide(name) is None:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandInModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []
        for name, value in (self.decide(module.__name__) or {}).items():
            setattr(module, name, value)
        RECORD.modules.append(module.__name__)


def _explicit(name: str) -> dict[str, Any] | None:
    for root, attributes in EXPLICIT.items():
        if name == root:
            return attributes
        if name.startswith(root + "."):
            return {}
    return None


def _importer() -> str:
    """The module whose import statement is being served: the first frame outside the import machinery and this
    file."""
    frame = sys._getframe(1)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if not (name.startswith(("importlib", "_frozen_importlib")) or frame.f_code.co_filename == __file__):
            return name
        frame = frame.f_back
    return ""


def _not_installed(name: str) -> dict[str, Any] | None:
    """Last on sys.meta_path, so only asked for what no real finder found: a stand-in when a NeMo RL module imports
    it (never for another package's optional imports, nor below a real package), and none once RL is imported (an
    import RL makes at run time fails as it would, and is reported)."""
    if RECORD.armed:
        RECORD.missing.append(name)
        return None
    root = sys.modules.get(name.partition(".")[0])
    if root is not None and not isinstance(root, _StandInModule):
        return None
    importer = _importer()
    return {} if importer == "nemo_rl" or importer.startswith("nemo_rl.") else None


def install_stand_ins() -> None:
    for name in REAL:
        importlib.import_module(name)
    sys.meta_path.insert(0, _Finder(_explicit))
    sys.meta_path.append(_Finder(_not_installed))


class ByteTokenizer:
    """gymgate's tokenizer as RL uses it on this path: `batch_decode` (ids 0-255 are bytes, the special tokens are
    their text, invalid UTF-8 becomes U+FFFD as the byte-level decoder does) and `pad_token_id`. Anything else RL
    asks of it is recorded and raises."""

    def __init__(self, special: dict[str, int], pad_token_id: int) -> None:
        self.pad_token_id = pad_token_id
        self._special = {int(i): token for token, i in special.items()}
        self.asked: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            self.asked.append(name)
        raise AttributeError(f"the stand-in tokenizer has no {name!r}: RL asked for more than it decodes with")

    def batch_decode(self, sequences: Any, **options: Any) -> list[str]:
        if options:
            self.asked.append(f"batch_decode({', '.join(sorted(options))})")
            raise TypeError(f"the stand-in tokenizer decodes with the default options only, not {sorted(options)}")
        return [self.decode(ids) for ids in sequences]

    def decode(self, ids: Any) -> str:
        out = bytearray()
        for raw in ids:
            token = int(raw)
            if 0 <= token < 256:
                out.append(token)
            elif token in self._special:
                out += self._special[token].encode()
            else:
                raise ValueError(f"token id {token} is neither a byte nor one of gymgate's special tokens")
        return out.decode("utf-8", errors="replace")


# -- RL's path -----------------------------------------------------------------------------------------------------
def _failure(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": str(exc)[:1000]}


class RlConsumer:
    """NeMo RL's functions on this path, from the checkout imported."""

    def __init__(self, rl_repo: Path) -> None:
        sys.path.insert(0, str(rl_repo))
        self.nemo_gym = importlib.import_module("nemo_rl.environments.nemo_gym")
        self.rollouts = importlib.import_module("nemo_rl.experience.rollouts")
        self.batched = importlib.import_module("nemo_rl.distributed.batched_data_dict").BatchedDataDict
        self.timer = importlib.import_module("nemo_rl.utils.timer").Timer
        self.torch = importlib.import_module("torch")
        imported = Path(self.nemo_gym.__file__).resolve()
        if not imported.is_relative_to(rl_repo.resolve()):
            raise RuntimeError(f"nemo_rl was imported from {imported}, not from the checkout {rl_repo}")
        # The actor class as written (ray.remote leaves it so here; a real Ray keeps it on __ray_metadata__).
        actor = self.nemo_gym.NemoGym
        self.actor = getattr(getattr(actor, "__ray_metadata__", None), "modified_class", actor)

    def postprocess(self, row: dict[str, Any], result: Any, tokenizer: ByteTokenizer, cfg: dict[str, Any]) -> Any:
        """The Gym actor's half: the postprocess RL runs on each result and its NaN check, then what crosses Ray
        (a pickle) and the driver's re-tensorizing."""
        actor = SimpleNamespace(cfg=cfg, _processor=None)
        processed = self.actor._postprocess_nemo_gym_to_nemo_rl_result(actor, row, result, tokenizer)
        if self.nemo_gym._has_nan_generation_logprobs(processed):
            raise RuntimeError("RL's NaN check (_has_nan_generation_logprobs) found NaN generation logprobs")
        processed = pickle.loads(pickle.dumps(processed))
        self.rollouts._tensorize_nemo_gym_result(processed)
        return processed

    def group(
        self, rows: list[dict[str, Any]], results: list[dict[str, Any]], tokenizer: ByteTokenizer, max_model_len: int
    ) -> dict[str, Any]:
        """The driver's half: one group's final batch (its message logs left out: each result carries its own) and
        rollout metrics, with the prompt ids RL returns beside them."""
        done = self.rollouts._postprocess_single_nemo_gym_group(
            nemo_gym_rows=rows,
            results=results,
            timer=self.timer(),
            timer_prefix=TIMER_PREFIX,
            policy_generation=SimpleNamespace(cfg={"vllm_cfg": {"max_model_len": max_model_len}}),
            input_batch=self.batched({"loss_multiplier": self.torch.ones(len(results))}),
            tokenizer=tokenizer,
            log_full_result_tables=True,
        )
        batch = {k: v for k, v in done.final_batch.items() if k != "message_log"}
        return canonical({"input_ids": done.input_ids, "batch": batch, "metrics": done.rollout_metrics})


def drive(
    inputs: list[dict[str, Any]],
    postprocess: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
    group: Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]],
    keep: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One consumer's half, the same for RL's and gymgate's: each stored result postprocessed (a refusal is an
    outcome too) and grouped alone, then every processed result grouped together. `keep(entry, processed)` may note
    and drop what only that consumer adds. Returns (per item, together), as canonical JSON."""
    items: dict[str, Any] = {}
    together: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for item in inputs:
        entry: dict[str, Any] = {}
        items[item["id"]] = entry
        row = copy.deepcopy(item["row"])
        try:
            processed = postprocess(row, copy.deepcopy(item["result"]))
        except Exception as exc:  # noqa: BLE001 - a consumer's refusal of a result is an outcome to compare
            entry["raised"] = _failure(exc)
            continue
        if keep is not None:
            keep(entry, processed)
        together.append((item["id"], row, copy.deepcopy(processed)))
        try:
            entry["group"] = group([row], [processed])
        except Exception as exc:  # noqa: BLE001 - as above
            entry["group_raised"] = _failure(exc)
        entry["result"] = canonical(processed)
    whole: dict[str, Any] = {"ids": [i for i, _, _ in together]}
    if together:
        try:
            whole["group"] = group([r for _, r, _ in together], [p for _, _, p in together])
        except Exception as exc:  # noqa: BLE001 - as above
            whole["group_raised"] = _failure(exc)
    return items, whole


def run(rl_repo: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    install_stand_ins()
    rl = RlConsumer(rl_repo)
    RECORD.armed = True
    tokenizer = ByteTokenizer(inputs["tokenizer"]["special"], int(inputs["tokenizer"]["pad_token_id"]))
    max_len, cfg = int(inputs["max_total_len"]), dict(inputs.get("actor_cfg") or {})
    items, whole = drive(
        inputs["items"],
        lambda row, result: rl.postprocess(row, result, tokenizer, cfg),
        lambda rows, processed: rl.group(rows, processed, tokenizer, max_len),
    )
    return {
        "nemo_rl": str(Path(rl.nemo_gym.__file__).resolve()),
        "stood_in": sorted(set(RECORD.modules)),
        "stand_ins_called": RECORD.called,
        "imports_missing_at_run_time": RECORD.missing,
        "tokenizer_asked": tokenizer.asked,
        "items": items,
        "together": whole,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rl-repo", type=Path, required=True, help="a NeMo RL checkout")
    parser.add_argument("--inputs", type=Path, required=True, help="items, tokenizer table, max_total_len (JSON)")
    parser.add_argument("--out", type=Path, required=True, help="where RL's outputs are written (JSON)")
    args = parser.parse_args(argv)
    try:
        out = run(args.rl_repo, json.loads(args.inputs.read_text()))
    except Exception:  # noqa: BLE001 - RL could not be imported or driven at all: the trace is the message
        traceback.print_exc()
        return 1
    args.out.write_text(json.dumps(out, allow_nan=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
