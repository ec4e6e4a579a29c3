"""How big each command argument may be: checked on the raw JSON before it is parsed, listed in
docs/protocol.md, and refused with `-32602` naming the field and its size, never its value.

The bounds are far above what a person types or an editor sends; they keep one request from
costing the server (and the model's context, the task's files, the log) more than a task can use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limit:
    chars: int
    """The longest string (characters); for a list or an object, the most entries."""
    what: str
    advice: str


PATH = Limit(4096, "a path or `file://` URI", "pass a shorter path")
ID = Limit(128, "an id or a name", "pass the id exactly as the server gave it")

FIELDS: dict[str, Limit] = {
    "brief": Limit(32_000, "a task's brief", "shorten it, or put the details in a file of the "
                   "workspace and name that file in the brief"),
    "text": Limit(16_000, "an answer", "shorten it, or put the details in a file of the workspace"),
    "feedback": Limit(16_000, "plan feedback", "shorten it, or put the details in a file"),
    "content": Limit(8_000, "a memory's text", "keep one durable fact per memory"),
    "query": Limit(2_000, "a memory search", "search with a few words"),
    "workspace": PATH,
    "manifest": PATH,
    "package": PATH,
    "testCommand": Limit(4096, "a test command", "put a long command in a script and run that"),
    "taskId": ID,
    "questionId": ID,
    "id": ID,
    "agent": ID,
    "category": Limit(64, "a memory category", "use a short category name"),
    "choices": Limit(10_000, "conflict choices (entries; each key is a path)",
                     "resolve the conflicts in smaller groups"),
    "ids": Limit(1_000, "memory ids (entries)", "apply the promotion in smaller groups"),
}
"""Wire names of the command arguments with their own bound."""

OTHER_STRING = Limit(4096, "any other string", "shorten it")
OTHER_ENTRIES = Limit(1_000, "any other list or object (entries)", "send fewer entries")
FIELD_NAME = Limit(64, "a field name", "use the field names of docs/protocol.md")
MAX_DEPTH = 4
"""Arguments nest at most this deep (an object in a list in an object is 3)."""


class TooLarge(ValueError):
    """An argument over its bound; the message names the field and the sizes only."""


def check(command: str, raw: Mapping[str, Any]) -> None:
    """Raise TooLarge when any field of `raw` (a command's one argument object) is over its bound."""
    _check_object(command, "", raw, 1)


def _check_object(command: str, where: str, value: Mapping[Any, Any], depth: int) -> None:
    for key, item in value.items():
        name = key if isinstance(key, str) else str(key)
        if len(name) > FIELD_NAME.chars and not where:
            raise TooLarge(
                f"{command}: a field name of {len(name):,} characters is over the limit of "
                f"{FIELD_NAME.chars}; {FIELD_NAME.advice}"
            )
        if where:  # the keys of a nested object (conflict paths) are bounded as paths
            if len(name) > PATH.chars:
                raise TooLarge(
                    f"{command}: `{where}` has a key of {len(name):,} characters, over the limit "
                    f"of {PATH.chars:,}; {PATH.advice}"
                )
            _check_value(command, where, item, depth + 1, element=True)
        else:
            _check_value(command, name, item, depth + 1, element=False)


ENTRY_FIELDS = frozenset({"choices", "ids"})
"""Fields whose bound counts entries, not characters."""


def _string_bound(name: str, element: bool) -> Limit:
    if element:
        return ID if name == "ids" else OTHER_STRING
    limit = FIELDS.get(name)
    return limit if limit is not None and name not in ENTRY_FIELDS else OTHER_STRING


def _check_value(command: str, name: str, value: Any, depth: int, *, element: bool) -> None:
    if depth > MAX_DEPTH and isinstance(value, (list, dict)):
        raise TooLarge(f"{command}: `{name}` nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        bound = _string_bound(name, element)
        if len(value) > bound.chars:
            shown = f"`{name}` has an entry that" if element else f"`{name}`"
            raise TooLarge(
                f"{command}: {shown} is {len(value):,} characters, over the limit of "
                f"{bound.chars:,} for {bound.what}; {bound.advice}"
            )
    elif isinstance(value, (list, dict)):
        bound = FIELDS[name] if name in ENTRY_FIELDS and not element else OTHER_ENTRIES
        if len(value) > bound.chars:
            raise TooLarge(
                f"{command}: `{name}` has {len(value):,} entries, over the limit of "
                f"{bound.chars:,} for {bound.what}; {bound.advice}"
            )
        if isinstance(value, dict):
            _check_object(command, name, value, depth)
        else:
            for item in value:
                _check_value(command, name, item, depth + 1, element=True)


def markdown_rows() -> list[str]:
    """The table of docs/protocol.md's "Argument limits"."""
    rows = ["| argument | limit | what |", "| --- | --- | --- |"]
    for name, limit in FIELDS.items():
        unit = "entries" if name in ("choices", "ids") else "characters"
        rows.append(f"| `{name}` | {limit.chars:,} {unit} | {limit.what} |")
    rows.append(f"| each id in `ids` | {ID.chars:,} characters | a memory id |")
    rows.append(f"| any other string | {OTHER_STRING.chars:,} characters | |")
    rows.append(f"| any other list or object | {OTHER_ENTRIES.chars:,} entries | |")
    rows.append(f"| a field name | {FIELD_NAME.chars} characters | unknown names are errors anyway |")
    return rows
