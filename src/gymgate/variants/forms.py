"""The form catalogue (forms.toml) read and checked once, and a form applied to a path's script: the same answer,
written another way, or None when the form does not fit the answer."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from gymgate.endpoint.script import Script, ToolCall, Turn
from gymgate.selection import chosen
from gymgate.variants import rows, sessions

CATALOGUE = Path(__file__).with_name("forms.toml")
TEXT, CODE, ARGUMENTS, REASONING = "text", "code", "arguments", "reasoning"
JUDGE, SESSION, ROW = "judge", "session", "row"
WHERE = (TEXT, CODE, ARGUMENTS, REASONING, JUDGE, SESSION, ROW)
DECOY, OPTION = "<decoy>", "<option>"
# A fenced block, tagged python or untagged: a code form rewrites the last one of the answer (what code verifiers
# run; an untagged block after the program, its sample output, has no input() and so the form does not fit).
FENCE = re.compile(r"```(?:python|py|python3)?[ \t]*\n(?P<code>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Substitution:
    pattern: re.Pattern[str]
    with_: str
    last: bool = False


@dataclass(frozen=True)
class Form:
    name: str
    kind: str  # what kind of answer it rewrites (kept in a variant's record, for the reader)
    why: str
    where: str
    fits: tuple[re.Pattern[str], ...] = ()
    unfit: tuple[re.Pattern[str], ...] = ()
    substitutions: tuple[Substitution, ...] = ()
    prepend: str = ""
    append: str = ""
    json: dict[str, Any] = field(default_factory=dict, hash=False)
    decoys: tuple[str, ...] = ()
    session: str = ""  # for `session`: which rewrite of the calls (gymgate.variants.sessions.REWRITES)
    row: str = ""  # for `row`: which rewrite of the row (gymgate.variants.rows.REWRITES)
    default: bool = True

    @property
    def holds_tool_outputs(self) -> bool:
        """Whether its variants are held to their original's tool outputs too: the same work in more calls must
        get the same answers from the tools."""
        return self.where == SESSION

    def apply(
        self, script: Script, row: dict[str, Any] | None = None, session: sessions.SessionDecl | None = None
    ) -> Script | None:
        """The script with its answer in this form, or None when the form does not fit it (or changes nothing).
        `row`: the row the path is fed, for a form that reads it (None: not known yet, and the form fits as far as
        the answer tells); `session`: the environment's [session] declaration, for a session form."""
        if self.where == SESSION:
            return sessions.rewrite(self.session, script, session, row)
        if self.where == JUDGE:
            return self._judge_verdicts(script, row)
        if self.where == ROW:  # the answer stays; the row it answers is said another way (feed)
            return script if row is None or self.feed(row) is not None else None
        turns = list(script.turns)
        if self.where == ARGUMENTS:
            rewritten = [self._turn_arguments(t) for t in turns]
            if rewritten == turns:
                return None
            return replace(script, turns=tuple(rewritten))
        index = answer_turn(script)
        if index is None:
            return None
        turn = turns[index]
        if self.where == REASONING:
            reasoning = self.prepend + turn.reasoning if turn.reasoning else self.prepend.rstrip("\n")
            turns[index] = replace(turn, reasoning=reasoning)
        elif self.where == CODE:
            blocks = list(FENCE.finditer(turn.content))
            if not blocks:
                return None
            block = blocks[-1]
            code = self._rewrite(block.group("code"), row)
            if code is None:
                return None
            content = turn.content[: block.start("code")] + code + turn.content[block.end("code") :]
            turns[index] = replace(turn, content=content)
        else:
            content = self._rewrite(turn.content, row)
            if content is None:
                return None
            turns[index] = replace(turn, content=content)
        if turns[index] == turn:
            return None
        return replace(script, turns=tuple(turns))

    def feed(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """For a `row` form: the row in this form, or None when it does not fit the row (nothing to rewrite)."""
        return rows.REWRITES[self.row](row) if self.where == ROW else None

    def _judge_verdicts(self, script: Script, row: dict[str, Any] | None) -> Script | None:
        """Every judge reply the script gives that the form fits, in the form (the judge is a model too)."""
        verdicts = tuple(self._rewrite(v, row) or v for v in script.judge_verdicts)
        return None if verdicts == script.judge_verdicts else replace(script, judge_verdicts=verdicts)

    def _fits(self, text: str) -> bool:
        return all(p.search(text) for p in self.fits) and not any(p.search(text) for p in self.unfit)

    def _rewrite(self, text: str, row: dict[str, Any] | None) -> str | None:
        if not self._fits(text):
            return None
        for sub in self.substitutions:
            matches = list(sub.pattern.finditer(text))
            if not matches:
                return None
            for match in reversed(matches[-1:] if sub.last else matches):
                expanded = self._expand(match, sub.with_, row)
                if expanded is None:
                    return None
                text = text[: match.start()] + expanded + text[match.end() :]
        return self.prepend + text + self.append

    def _expand(self, match: re.Match[str], template: str, row: dict[str, Any] | None) -> str | None:
        answer = match.group(1) if match.groups() else match.group(0)
        if DECOY in template:
            decoy = next((d for d in self.decoys if d != answer), None)
            if decoy is None:
                return None
            template = template.replace(DECOY, decoy)
        if OPTION in template:
            option = OPTION if row is None else option_text(row, answer)  # no row yet: applied again to it
            if option is None:
                return None
            template = template.replace(OPTION, option.replace("\\", "\\\\"))
        return match.expand(template)

    def _turn_arguments(self, turn: Turn) -> Turn:
        calls = tuple(ToolCall(c.name, self._arguments(c.arguments)) for c in turn.tool_calls)
        return replace(turn, tool_calls=calls)

    def _arguments(self, arguments: str) -> str:
        try:
            value = json.loads(arguments)
        except ValueError:
            return arguments
        if not isinstance(value, dict) or len(value) < int(self.json.get("min_keys", 1)):
            return arguments
        if self.json.get("reverse_keys"):
            value = _reversed_keys(value)
        separators = tuple(self.json["separators"]) if "separators" in self.json else None
        return json.dumps(value, indent=self.json.get("indent"), separators=separators, ensure_ascii=False)


def answer_turn(script: Script) -> int | None:
    """The turn that gives the final answer: the last one that says something."""
    return next((i for i in range(len(script.turns) - 1, -1, -1) if script.turns[i].content.strip()), None)


def option_text(row: dict[str, Any] | None, letter: str) -> str | None:
    """The text a row's `options` (a list of {letter: text}) give this letter, or None."""
    for option in (row or {}).get("options") or []:
        if isinstance(option, dict) and isinstance(option.get(letter), str):
            return option[letter]
    return None


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


# What each `where` may declare beside the keys every form has: the rest would be silently ignored.
COMMON = {"name", "kind", "why", "where", "default"}
FITTING = {"fits", "unfit", "match"}
ALLOWED = {
    TEXT: COMMON | FITTING | {"replace", "prepend", "append", "decoys"},
    CODE: COMMON | FITTING | {"replace", "prepend", "append", "decoys"},
    JUDGE: COMMON | FITTING | {"replace", "prepend", "append", "decoys"},
    ARGUMENTS: COMMON | {"json"},
    REASONING: COMMON | {"prepend"},
    SESSION: COMMON | {"session"},
    ROW: COMMON | {"row"},
}


def _form(entry: dict[str, Any], matches: dict[str, Any], file: str) -> Form:
    entry = dict(entry)
    name = entry.pop("name", "")
    where = entry.get("where")
    problems = []
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        problems.append(f"name {name!r} (letters, digits, _: it names a path)")
    if where not in WHERE:
        problems.append(f"where {where!r} ({', '.join(WHERE)})")
    else:
        problems += [f"key `{k}` (not for where = {where!r})" for k in sorted(set(entry) - ALLOWED[where] - {"name"})]
    problems += [f"`{k}` (missing)" for k in ("kind", "why") if not isinstance(entry.get(k), str)]
    shared = matches.get(entry.pop("match", "")) if "match" in entry else {}
    if shared is None:
        problems.append("match (no such [match.<name>] table)")
        shared = {}
    try:
        fits = tuple(re.compile(p) for p in [*shared.get("fits", []), *entry.pop("fits", [])])
        unfit = tuple(re.compile(p) for p in [*shared.get("unfit", []), *entry.pop("unfit", [])])
        subs = tuple(
            Substitution(re.compile(s["pattern"]), s["with"], bool(s.get("last", False)))
            for s in entry.pop("replace", [])
        )
    except (re.error, KeyError, TypeError) as exc:
        raise ValueError(f"{file}: form {name!r}: bad pattern: {exc}") from exc
    if where == SESSION:
        if entry.get("session") not in sessions.REWRITES:
            problems.append(f"session {entry.get('session')!r} ({', '.join(sessions.REWRITES)})")
    elif where == ROW:
        if entry.get("row") not in rows.REWRITES:
            problems.append(f"row {entry.get('row')!r} ({', '.join(rows.REWRITES)})")
    elif not (subs or entry.get("prepend") or entry.get("append") or entry.get("json")):
        problems.append("rewrite (replace, prepend, append or json)")
    if where == ARGUMENTS and not entry.get("json"):
        problems.append("json (an `arguments` form rewrites the JSON)")
    if problems:
        raise ValueError(f"{file}: form {name!r}: bad {'; '.join(problems)}")
    decoys = tuple(entry.pop("decoys", ()))
    return Form(name=name, fits=fits, unfit=unfit, substitutions=subs, decoys=decoys, **entry)


@cache
def catalogue(path: Path = CATALOGUE) -> tuple[tuple[Form, ...], tuple[str, ...]]:
    """Every declared form, and the verdict fields a variant must agree with its original on."""
    data = tomllib.loads(path.read_text())
    forms = tuple(_form(entry, data.get("match", {}), path.name) for entry in data.get("form", []))
    names = [f.name for f in forms]
    if len(set(names)) != len(names):
        raise ValueError(f"{path.name}: a form name appears twice")
    return forms, tuple(data["verdict"]["fields"])


@cache
def families(path: Path = CATALOGUE) -> dict[str, tuple[str, ...]]:
    """Each family of forms ([families]: what reports count together) and the kinds of answer in it; every form's
    kind is in exactly one."""
    declared = {str(k): tuple(v) for k, v in tomllib.loads(path.read_text()).get("families", {}).items()}
    kinds = [k for v in declared.values() for k in v]
    missing = sorted({f.kind for f in catalogue(path)[0]} - set(kinds))
    if missing or len(kinds) != len(set(kinds)):
        raise ValueError(f"{path.name}: [families] must hold every form's kind once (missing: {', '.join(missing)})")
    return declared


def selected(selection: str) -> tuple[Form, ...]:
    """The forms a run's variant paths come from (--variants: one of SELECTIONS)."""
    return chosen(catalogue()[0], selection, "--variants")


def verdict_fields(result: dict[str, Any], patterns: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The declared verdict fields a result carries, by dotted name (`*` in a pattern: any key or list index)."""
    patterns = catalogue()[1] if patterns is None else patterns
    found: dict[str, Any] = {}

    def walk(value: Any, prefix: str) -> None:
        for pattern in patterns:
            if prefix and fnmatch.fnmatchcase(prefix, pattern):
                found[prefix] = value
                return
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            return
        for key, item in items:
            name = f"{prefix}.{key}" if prefix else str(key)
            if any(_could_match(name, p) for p in patterns):
                walk(item, name)

    walk(result, "")
    return found


def _could_match(prefix: str, pattern: str) -> bool:
    """Whether a dotted prefix can still lead to a field the pattern names."""
    depth = prefix.count(".") + 1
    head = ".".join(pattern.split(".")[:depth])
    return fnmatch.fnmatchcase(prefix, head)
