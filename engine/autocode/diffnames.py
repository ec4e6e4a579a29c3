"""File names in unified diffs, as git writes and reads them.

Git puts a name in double quotes, with C-style escapes, when it holds a quote, a
backslash or a control character (and, unless `core.quotePath` is off, any byte
past ASCII): `"a/caf\\303\\251.py"`. This module reads such names back into
paths (`str`, undecodable bytes kept by surrogateescape, as `os.fsdecode` gives
them), finds the paths a diff touches, and writes one file's diff with names
`git apply` takes. A leaf: it imports nothing of the project.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_QUOTE_AS = {value: key for key, value in _ESCAPES.items()}
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _quoted_end(text: str) -> int:
    """The index just past the closing quote of the C-quoted string `text` starts with, or -1."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return -1


def unquote(field: str) -> str:
    """A name as git wrote it: a C-quoted `"..."` is decoded, anything else is returned as is."""
    if len(field) < 2 or not field.startswith('"') or _quoted_end(field) != len(field):
        return field
    out = bytearray()
    body = field[1:-1]
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += os.fsencode(ch)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif re.fullmatch(r"[0-3][0-7]{2}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:  # not an escape git writes: keep the backslash as it stands
            out.append(92)
            i += 1
    return os.fsdecode(bytes(out))


def needs_quotes(name: str) -> bool:
    """Whether git would quote `name` (with `core.quotePath` off, as AutoCode runs it)."""
    raw = os.fsencode(name)
    if any(b < 0x20 or b in (0x22, 0x5C, 0x7F) for b in raw):
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True  # bytes that are not UTF-8 text only travel escaped
    return False


def quote(name: str) -> str:
    """`name` as git writes it in a diff: C-quoted when it needs quotes, else unchanged. Valid
    UTF-8 past ASCII stays readable (as git writes it with `core.quotePath` off); bytes that
    are not UTF-8 are written as octal escapes."""
    if not needs_quotes(name):
        return name
    raw = os.fsencode(name)
    try:
        units = raw.decode("utf-8")
    except UnicodeDecodeError:
        units = raw.decode("latin-1")  # one unit a byte; every one past ASCII is escaped below
        escape_high = True
    else:
        escape_high = False
    out: list[str] = []
    for ch in units:
        code = ord(ch)
        if code in _QUOTE_AS:
            out.append("\\" + _QUOTE_AS[code])
        elif code < 0x20 or code == 0x7F or (escape_high and code >= 0x80):
            out.append(f"\\{code:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _strip_prefix(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def header_name(field: str, *, prefixed: bool = True) -> str | None:
    """The path a `---`/`+++` field names: unquoted, without its date or git's trailing tab,
    without the a/ b/ prefix (`prefixed=False` for `rename from` and kin, which have none);
    None for /dev/null."""
    field = field.rstrip("\r\n")
    if field.startswith('"'):
        end = _quoted_end(field)
        name = unquote(field[:end]) if end > 0 else field
    else:
        name = field.split("\t")[0].rstrip()
    if name == "/dev/null":
        return None
    return _strip_prefix(name) if prefixed else name


def _header_names(rest: str) -> tuple[str | None, str | None]:
    """(a, b) of a `diff --git a b` header; None where it cannot be told (spaces, both unquoted,
    names that differ)."""
    rest = rest.rstrip("\r\n")
    if rest.startswith('"'):
        end = _quoted_end(rest)
        if end < 0:
            return None, None
        first = unquote(rest[:end])
        second = rest[end:].lstrip(" ")
        return _strip_prefix(first), _strip_prefix(unquote(second))
    if rest.endswith('"'):
        start = rest.rfind(' "')
        while start >= 0 and _quoted_end(rest[start + 1 :]) != len(rest) - start - 1:
            start = rest.rfind(' "', 0, start)
        if start >= 0:
            return _strip_prefix(rest[:start]), _strip_prefix(unquote(rest[start + 1 :]))
    # Both unquoted: git only writes that for one name on both sides ("a/X b/X").
    if len(rest) % 2 == 1:
        half = (len(rest) - 1) // 2
        a, b = rest[:half], rest[half + 1 :]
        if rest[half] == " " and _strip_prefix(a) == _strip_prefix(b):
            return _strip_prefix(a), _strip_prefix(b)
    return None, None


@dataclass
class FileChange:
    """One file's part of a diff: its old and new path (None for a created or deleted file)."""

    old: str | None
    new: str | None
    renamed: bool = False


def read_changes(diff: str) -> list[FileChange]:
    """Every file a unified diff (git style or plain) touches, in order. Hunk bodies are read by
    their header's line counts, so a removed line `-- x` is never taken for a `---` header."""
    # Split at newlines only: a form feed or U+2028 inside a changed line is part of that line.
    rows = [row + "\n" for row in diff.split("\n")]
    changes: list[FileChange] = []
    current: FileChange | None = None
    git_header = False
    i = 0
    while i < len(rows):
        raw = rows[i]
        i += 1
        if raw.startswith("diff --git "):
            a, b = _header_names(raw[len("diff --git ") :])
            current = FileChange(a, b)
            changes.append(current)
            git_header = True
            continue
        if raw.startswith(("rename from ", "copy from ")) and current is not None:
            current.old = header_name(raw.split(" ", 2)[2], prefixed=False)
            current.renamed = raw.startswith("rename")
            continue
        if raw.startswith(("rename to ", "copy to ")) and current is not None:
            current.new = header_name(raw.split(" ", 2)[2], prefixed=False)
            continue
        if raw.startswith("new file mode") and current is not None:
            current.old = None
            continue
        if raw.startswith("deleted file mode") and current is not None:
            current.new = None
            continue
        if raw.startswith("--- ") and i < len(rows) and rows[i].startswith("+++ "):
            old, new = header_name(raw[4:]), header_name(rows[i][4:])
            i += 1
            if current is None or not git_header:
                current = FileChange(old, new)
                changes.append(current)
            else:
                current.old, current.new = old, new
            git_header = False  # a plain diff's next file starts at its own ---/+++ pair
            continue
        match = _HUNK.match(raw)
        if match:
            old_left = int(match.group(1)) if match.group(1) is not None else 1
            new_left = int(match.group(2)) if match.group(2) is not None else 1
            while i < len(rows) and (old_left > 0 or new_left > 0 or rows[i].startswith("\\")):
                line = rows[i]
                if line.startswith("diff --git "):
                    break  # a hunk shorter than its header said (a hand-made diff): the next file starts
                i += 1
                if line.startswith("\\"):
                    continue
                if not line.startswith("+"):
                    old_left -= 1
                if not line.startswith("-"):
                    new_left -= 1
    return [c for c in changes if c.old is not None or c.new is not None]


def diff_paths(diff: str) -> list[str]:
    """The paths a diff touches (both sides of a rename), each once, in order."""
    seen: dict[str, None] = {}
    for change in read_changes(diff):
        for name in (change.old, change.new):
            if name is not None:
                seen.setdefault(name, None)
    return list(seen)


def renamed_from(diff: str) -> set[str]:
    """The old paths of the files a diff renames."""
    return {c.old for c in read_changes(diff) if c.renamed and c.old is not None}


def _label(prefix: str, rel: str) -> str:
    name = quote(prefix + rel)
    # Git ends a name holding a space with a tab, so a reader that stops at whitespace still works.
    return name + ("\t" if " " in name and not name.startswith('"') else "")


def file_diff(rel: str, old: str | None, new: str | None) -> str:
    """A git-style unified diff of one file from `old` to `new` (None: absent), or "" when equal."""
    if old == new:
        return ""
    header = [f"diff --git {quote('a/' + rel)} {quote('b/' + rel)}\n"]
    if old is None:
        header.append("new file mode 100644\n")
    elif new is None:
        header.append("deleted file mode 100644\n")
    lines = list(
        difflib.unified_diff((old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True), n=3)
    )
    if not lines:  # an empty file created or deleted: the header says it all
        return "".join(header)
    body: list[str] = [
        ("--- " + _label("a/", rel) if old is not None else "--- /dev/null") + "\n",
        ("+++ " + _label("b/", rel) if new is not None else "+++ /dev/null") + "\n",
    ]
    for line in lines[2:]:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        body.append(line)
    return "".join(header + body)
