"""A Gym's recorded rollouts of one environment, as values: each parsed line of the server's
`data/example_rollouts.jsonl`, keyed by its content, with the example row it was recorded on.

Gym stores a recording's request as its pydantic model dumps it (every create param, nulls included; input items
typed), not the row's bytes, so the row is found again by what the model was asked: the same messages (role and
text) in one of the data files the server ships. A recording whose row the Gym does not ship cannot be replayed
(the verifier needs the row's own fields: a gold answer, a ground truth); it stays a path, one that says so.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from gymgate.pathid import PathId
from gymgate.recordings.fidelity import unreplayable_shape

RECORDINGS = "example_rollouts.jsonl"
# Keys Gym adds to a recording for its own bookkeeping (0.7.0: which task and which repeat; the agent it ran):
# not part of what the model wrote or Gym returned, so not part of a recording's identity across releases.
TASK_INDEX = "_ng_task_index"
BOOKKEEPING = (TASK_INDEX, "_ng_rollout_index", "agent_ref")
KEY_HEX = 10  # a path id's recording key: 40 bits of the content's SHA256, unique among a Gym's ~700 recordings


class GymFiles(Protocol):
    """Read access to a Gym's files by their path in the installed package (refs.distribution.Distribution, or
    LocalFiles over a Gym installed here)."""

    def read(self, relpath: str) -> str | None: ...

    def files(self, prefix: str) -> list[str]: ...


class LocalFiles:
    """A Gym installed in this environment (its site-packages directory)."""

    def __init__(self, root: Path):
        self.root = root

    def read(self, relpath: str) -> str | None:
        path = self.root / relpath
        return path.read_text() if path.is_file() else None

    def files(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file())


@dataclass(frozen=True)
class Recording:
    """One recorded rollout of an environment, and where it and its row came from."""

    env: str  # the gymgate environment it is replayed in
    key: str  # content key: stable across releases that ship the same recording
    gym: str  # the Gym (version or ref name) whose files it was read from
    file: str
    line: int
    sha256: str  # of the recording's line
    recorded: dict[str, Any] = field(repr=False)
    row: dict[str, Any] | None = field(default=None, repr=False)  # the example row it was recorded on
    row_file: str = ""
    row_line: int = -1
    row_sha256: str = ""

    @property
    def unreplayable(self) -> str:
        """Why this recording cannot be replayed here ("" when it can)."""
        if self.row is None:
            return "its row is not in the data this Gym ships (the verifier needs the row's own fields)"
        if not isinstance(self.recorded.get("response"), dict):
            return "it holds no response object"
        shape = unreplayable_shape(PathId.named(self.env, "recording", key=self.key), self.gym)
        if shape is not None:
            return f"{shape.reason.split('. ')[0].strip()} (cases/recordings/fidelity.toml)"
        if not self.recorded["response"].get("output"):
            return "it records no output: the rollout failed before the model's first answer"
        return ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recording:
        return cls(**data)


def content_key(recorded: dict[str, Any]) -> str:
    """The recording's identity: its content without Gym's bookkeeping keys, canonical JSON, SHA256."""
    kept = {k: v for k, v in recorded.items() if k not in BOOKKEEPING}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_HEX]


def data_dir(config: str) -> str:
    """`resources_servers/<server>/data` for an environment's config file (resources_servers/<server>/configs/…)."""
    return str(PurePosixPath(config).parents[1] / "data")


def read_recordings(files: GymFiles, env: str, data: str, row_file: str = "", gym: str = "") -> list[Recording]:
    """Every parseable recording in a server's `data` folder (data_dir), in file order (a line that is not JSON is
    not a recording: Gym ships some). `row_file`, the file the environment's case reads, is searched first for
    rows."""
    text = files.read(f"{data}/{RECORDINGS}")
    if text is None:
        return []
    rows = _RowIndex(files, data, row_file)
    found: list[Recording] = []
    for number, line in enumerate(text.splitlines()):
        try:
            recorded = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(recorded, dict):
            continue
        row, row_file_of, row_line, row_sha = rows.find(recorded)
        found.append(
            Recording(
                env=env,
                key=content_key(recorded),
                gym=gym,
                file=f"{data}/{RECORDINGS}",
                line=number,
                sha256=hashlib.sha256(line.encode()).hexdigest(),
                recorded=recorded,
                row=row,
                row_file=row_file_of,
                row_line=row_line,
                row_sha256=row_sha,
            )
        )
    return found


def asked(params: Any) -> tuple[Any, ...]:
    """What the model was asked, independent of how the request was dumped: (role, text) per input message."""
    if not isinstance(params, dict):
        return ()
    items = params.get("input")
    if isinstance(items, str):
        return (("user", items),)
    asked_items: list[Any] = []
    for item in items or []:
        if not isinstance(item, dict):
            asked_items.append(json.dumps(item, sort_keys=True))
        elif "content" in item:
            asked_items.append((item.get("role") or item.get("type"), _text(item["content"])))
        else:  # a function call or its output in the row's history
            kept = {k: v for k, v in item.items() if k not in ("id", "status")}
            asked_items.append(json.dumps(kept, sort_keys=True))
    return (params.get("instructions") or "", *asked_items)


def _text(content: Any) -> str:
    """A message's text, with each part that is not text (an image, audio) as its type and a digest of its data:
    rows that ask the same words about different images are different rows."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part(p) for p in content)
    return json.dumps(content, sort_keys=True)


MEDIA_KEYS = ("image_url", "audio_url", "video_url", "input_audio", "file_data", "url", "data")


def _part(part: Any) -> str:
    if not isinstance(part, dict):
        return str(part)
    if "text" in part:
        return str(part["text"])
    payload = next((part[k] for k in MEDIA_KEYS if part.get(k)), None)
    if isinstance(payload, dict):
        payload = payload.get("url") or payload.get("data") or json.dumps(payload, sort_keys=True)
    digest = hashlib.sha256(str(payload).encode()).hexdigest()[:16] if payload else ""
    return f"[{part.get('type', 'part')}:{digest}]"


class _RowIndex:
    """The server's data rows by what they ask, read lazily file by file (the case's file — wherever it lies —,
    example.jsonl, then the rest of data/ but other recordings)."""

    def __init__(self, files: GymFiles, data: str, first: str):
        names = [n for n in files.files(data) if n.endswith(".jsonl") and "rollouts" not in PurePosixPath(n).name]
        preferred = [first, f"{data}/example.jsonl"]
        outside = [first] if first and first not in names and files.read(first) is not None else []
        self._pending = outside + [n for n in preferred if n in names] + [n for n in names if n not in preferred]
        self._files = files
        self._rows: dict[tuple[Any, ...], list[tuple[dict[str, Any], str, int, str]]] = {}

    def find(self, recorded: dict[str, Any]) -> tuple[dict[str, Any] | None, str, int, str]:
        want = asked(recorded.get("responses_create_params"))
        while want not in self._rows and self._pending:
            self._load(self._pending.pop(0))
        candidates = self._rows.get(want, [])
        if not candidates:
            return None, "", -1, ""
        # Rows asking the same thing (a dataset's repeats): the one whose fields the recording carries unchanged,
        # then the one whose request metadata is the recording's (asr_with_pc's audio rides in it), then the line
        # Gym's bookkeeping says the recording's task was (0.7.0's `_ng_task_index`: the row's index in its file).
        agreeing = [c for c in candidates if all(recorded.get(k, v) == v for k, v in c[0].items() if k != "agent_ref")]
        pool = agreeing or candidates
        sent = (recorded.get("responses_create_params") or {}).get("metadata") or None
        pool = [c for c in pool if (c[0]["responses_create_params"].get("metadata") or None) == sent] or pool
        task = recorded.get(TASK_INDEX)
        return ([c for c in pool if isinstance(task, int) and c[2] == task] or pool)[0]

    def _load(self, name: str) -> None:
        for number, line in enumerate((self._files.read(name) or "").splitlines(keepends=True)):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and isinstance(row.get("responses_create_params"), dict):
                sha = hashlib.sha256(line.encode()).hexdigest()
                self._rows.setdefault(asked(row["responses_create_params"]), []).append((row, name, number, sha))
