"""The tools a model may call in the prep copy, and the rules every call obeys.

Paths are relative to the copy. Absolute paths, `..`, a path through a link
that leads out of the copy, and anything under `.git` or `.autocode` are
refused with a `ToolError` (returned to the model as the tool's result, never
raised out of the loop). Every result is bounded in size; the loop scrubs it
(credentials only) before the model or the transcript sees it, and an edit
that quotes or writes a credential's placeholder is refused, so the file never
gets the placeholder. Every call gets `CallLimits` (the task's time left, its
cancel flag): the tools that run a process (`search`, `run_tests`) stop it
when either ends and raise `ToolStopped`.

Writes go through `Edits`, which keeps the first content of every file the
model touched, so the task's change is the difference between those and the
files as they end up, whatever order the edits came in.

Kept whole: each tool's schema sits next to the rules its calls obey (path
checks, size bounds), which is what a review of "what can a model do here"
reads.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from autocode import diffnames, scrub
from autocode.atomic import TMP_SUFFIX, write_atomically
from autocode.providers.agent import search
from autocode.providers.base import RunTests
from autocode.tasks.store import write_text_atomic

RESULT_LIMIT = 16_000
PAGE_LINES = 400
# A page's characters: below RESULT_LIMIT, leaving room for the header and for
# placeholders longer than the credentials they replace.
PAGE_CHARS = 12_000
LIST_LIMIT = 500
SEARCH_MATCHES = 100
TEST_TAIL = 6000
REFUSED_PARTS = frozenset({".git", ".autocode"})
SKIPPED_DIRS = frozenset({".git", ".autocode", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"})

READ_ONLY = ("read_file", "list_files", "search")
ALL_TOOLS = (*READ_ONLY, "edit_file", "write_file", "run_tests", "recall_memories", "save_memory")


class ToolError(Exception):
    """A tool call the engine refuses or cannot carry out; its text goes back to the model."""


class ToolStopped(ToolError):
    """A call stopped before it finished: `reason` is "cancelled" (the task) or "timed_out"."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class CallLimits:
    """What bounds one call: the seconds the task's time budget has left, and its cancel flag."""

    seconds: float | None = None
    cancelled: Callable[[], bool] | None = None


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    # The JSON Schema subset every endpoint takes (Gemini's included): type, description,
    # properties (never empty for an object), required (left out when empty); no
    # additionalProperties, no minimum. Arguments are checked by the tools themselves.
    parameters: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        parameters["required"] = required
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


_S = {"type": "string"}
_I = {"type": "integer", "description": "1 or more"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": _fn(
        "read_file",
        "Read a file of the repository copy with numbered lines. Long files come in pages of at most "
        f"{PAGE_LINES} lines and {PAGE_CHARS} characters; the first line of the answer says which lines it "
        "holds and the start_line (and, for a line longer than a page, start_column) of the next page.",
        {
            "path": _S,
            "start_line": _I,
            "end_line": _I,
            "start_column": {"type": "integer", "description": "the character of start_line to start at (1 or more)"},
        },
        ["path"],
    ),
    "list_files": _fn(
        "list_files",
        "List the repository's files (tracked and untracked, ignored files absent), under a folder "
        "and/or matching a glob pattern such as '*.py' or 'tests/**'.",
        {"path": _S, "pattern": _S},
        [],
    ),
    "search": _fn(
        "search",
        "Search the repository's files (or those under path) for a regular expression in ripgrep's syntax "
        "(no look-around, no backreferences); answers path:line: text.",
        {"pattern": _S, "path": _S},
        ["pattern"],
    ),
    "edit_file": _fn(
        "edit_file",
        "Replace old_text by new_text in a file. old_text must match the file exactly once "
        "(whitespace included); otherwise nothing changes and the error shows the closest lines.",
        {"path": _S, "old_text": _S, "new_text": _S},
        ["path", "old_text", "new_text"],
    ),
    "write_file": _fn(
        "write_file", "Create a file or replace its whole content.", {"path": _S, "content": _S}, ["path", "content"]
    ),
    "run_tests": _fn(
        "run_tests",
        "Run the project's test command in the repository copy; answers the exit code and the end of the output.",
        {"purpose": {"type": "string", "description": "optional: what this run should show"}},
        [],
    ),
    "recall_memories": _fn(
        "recall_memories", "Recall memories (lessons, conventions) relevant to a query.", {"query": _S}, ["query"]
    ),
    "save_memory": _fn(
        "save_memory",
        "Save one durable lesson for later tasks (no task details, no credentials); refusals come back as the result.",
        {"text": _S},
        ["text"],
    ),
}


def schemas(names: Iterable[str]) -> list[dict[str, Any]]:
    return [SCHEMAS[n] for n in names]


def bounded(text: str, limit: int = RESULT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 120]
    return cut + f"\n[... output cut: {len(text) - len(cut)} more characters; ask for less ...]"


@dataclass
class Edits:
    """The first content of each file the model changed (None: it did not exist), kept on disk."""

    copy: Path
    store: Path  # a JSON file in the run directory
    originals: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def open(cls, copy: Path, store: Path) -> Edits:
        edits = cls(copy, store)
        try:
            data = json.loads(store.read_text(encoding="utf-8"))
            edits.originals = {str(k): v for k, v in data.items()}
        except (FileNotFoundError, ValueError):
            pass
        return edits

    def write(self, rel: str, target: Path, content: str) -> None:
        if rel not in self.originals:
            old = read_text(target) if target.is_file() else None
            self.originals[rel] = old
            write_text_atomic(self.store, json.dumps(self.originals))
        target.parent.mkdir(parents=True, exist_ok=True)
        # line endings as given; the file's mode kept
        write_atomically(target, content.encode("utf-8", "surrogateescape"), durable=False)

    def files(self) -> list[str]:
        return [rel for rel in self.originals if self.current(rel) != self.originals[rel]]

    def current(self, rel: str) -> str | None:
        path = self.copy / rel
        return read_text(path) if path.is_file() else None

    def diff(self) -> str:
        """A git-style unified diff from the first content of each touched file to its content now."""
        return "".join(unified_diff(rel, self.originals[rel], self.current(rel)) for rel in sorted(self.originals))


def unified_diff(rel: str, old: str | None, new: str | None) -> str:
    """One file's git-style diff (names quoted as git quotes them); "" when nothing changed."""
    return diffnames.file_diff(rel, old, new)


class Toolbox:
    """The tools over one prep copy. `call(name, args)` answers text or raises ToolError."""

    def __init__(
        self,
        copy: Path,
        edits: Edits | None,
        *,
        allowed: Iterable[str],
        run_tests: RunTests | None = None,
        recall: Callable[[str], str] | None = None,
        save_memory: Callable[[str], dict[str, Any]] | None = None,
        search_seconds: float = search.SECONDS,
    ) -> None:
        self.copy = copy
        self.real = Path(os.path.realpath(copy))
        self.edits = edits
        self.allowed = tuple(allowed)
        self._run_tests = run_tests
        self._recall = recall
        self._save_memory = save_memory
        self.search_seconds = search_seconds
        self._listing: list[str] | None = None

    # -- paths --------------------------------------------------------------

    def resolve(self, raw: Any, *, for_write: bool = False) -> tuple[str, Path]:
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("path must be a non-empty string relative to the repository root")
        text = raw.strip().replace("\\", "/")
        if any(ord(ch) < 32 for ch in text):
            raise ToolError("the path has a control character (a null byte or a newline); refused")
        if text.startswith("/") or re.match(r"^[A-Za-z]:", text) or text.startswith("~"):
            raise ToolError(f"{raw!r} is an absolute path; give a path relative to the repository root")
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if not parts:
            raise ToolError("the path names the repository root itself; give a file path")
        if ".." in parts:
            raise ToolError(f"{raw!r} goes up with '..'; only paths inside the repository are allowed")
        if REFUSED_PARTS & set(parts):
            raise ToolError(f"{raw!r} is inside .git or .autocode, which the tools never touch")
        rel = "/".join(parts)
        target = self.copy.joinpath(*parts)
        real = Path(os.path.realpath(target))
        try:
            inside = real.relative_to(self.real)
        except ValueError:
            raise ToolError(f"{rel!r} leads out of the repository through a link; refused") from None
        if REFUSED_PARTS & set(inside.parts):
            raise ToolError(f"{rel!r} leads into .git or .autocode through a link; refused")
        if for_write and target.is_symlink():
            raise ToolError(f"{rel!r} is a link; edit the file it points to ({inside.as_posix()}) instead")
        return rel, target

    def listing(self) -> list[str]:
        """The copy's files as the task began (it holds no ignored file), plus files the model wrote."""
        if self._listing is None:
            found: list[str] = []
            for dirpath, dirnames, filenames in os.walk(self.copy):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
                base = os.path.relpath(dirpath, self.copy)
                for name in sorted(filenames):
                    if name.endswith(TMP_SUFFIX):
                        continue
                    found.append(name if base == "." else f"{base}/{name}".replace(os.sep, "/"))
            self._listing = found
        extra = [r for r in (self.edits.originals if self.edits else {}) if r not in self._listing]
        return sorted({*self._listing, *[r for r in extra if (self.copy / r).is_file()]})

    # -- dispatch ------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any], limits: CallLimits | None = None) -> str:
        if name not in self.allowed:
            known = ", ".join(self.allowed)
            raise ToolError(f"unknown tool {name!r}; the tools here are: {known}")
        method: Callable[[dict[str, Any], CallLimits], str] = getattr(self, "_t_" + name)
        return method(args, limits or CallLimits())

    def tests(self, limits: CallLimits) -> dict[str, Any]:
        """One run of the project's tests, cut at the task's time left; ToolStopped on cancel."""
        if self._run_tests is None:
            raise ToolError("no test command is known for this repository")
        result = self._run_tests(limit=limits.seconds)
        if result.get("status") == "cancelled":
            raise ToolStopped(
                f"the test run was stopped after {result.get('seconds')} s: the task was cancelled while it ran",
                "cancelled",
            )
        if result.get("status") == "timed_out" and limits.seconds is not None:
            result["output_tail"] = str(result.get("output_tail") or "") + (
                f"\n[the run was stopped after {result.get('seconds')} s: the test timeout or the task's "
                f"time budget ({limits.seconds:.0f} s left when it started) ran out]"
            )
        return result

    # -- the tools -------------------------------------------------------------

    def _t_read_file(self, args: dict[str, Any], limits: CallLimits) -> str:
        rel, target = self.resolve(args.get("path"))
        if target.is_dir():
            raise ToolError(f"{rel!r} is a folder; use list_files with path={rel!r}")
        if not target.is_file():
            raise ToolError(f"{rel!r} does not exist; list_files shows the files")
        data = target.read_bytes()
        if b"\0" in data[:8192]:
            return f"{rel}: a binary file of {len(data)} bytes (not shown)"
        return page(rel, data.decode("utf-8", "replace"), args)

    def _t_list_files(self, args: dict[str, Any], limits: CallLimits) -> str:
        files = self.listing()
        raw_path = args.get("path")
        if raw_path not in (None, "", "."):
            rel, target = self.resolve(raw_path)
            files = [f for f in files if f == rel or f.startswith(rel + "/")]
            if not files and not target.exists():
                raise ToolError(f"{rel!r} does not exist")
        pattern = args.get("pattern")
        if pattern is not None:
            if not isinstance(pattern, str):
                raise ToolError("pattern must be a string glob such as '*.py'")
            files = [f for f in files if _glob(f, pattern)]
        shown = files[:LIST_LIMIT]
        text = "\n".join(shown) if shown else "(no files match)"
        if len(files) > LIST_LIMIT:
            text += f"\n[... {len(files) - LIST_LIMIT} more files; narrow with path or pattern ...]"
        return bounded(text)

    def _t_search(self, args: dict[str, Any], limits: CallLimits) -> str:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("pattern must be a non-empty regular expression")
        if len(pattern) > search.PATTERN_CHARS:
            raise ToolError(f"the pattern has {len(pattern)} characters; keep it under {search.PATTERN_CHARS}")
        if "\0" in pattern or "\n" in pattern:
            raise ToolError("the pattern has a null byte or a newline; search matches within one line")
        paths = ["."]
        raw_path = args.get("path")
        if raw_path not in (None, "", "."):
            rel, target = self.resolve(raw_path)
            if not target.is_dir() and not target.is_file():
                raise ToolError(f"{rel!r} is neither a file nor a folder of the repository; list_files shows them")
            paths = [rel]
        seconds = self.search_seconds if limits.seconds is None else min(self.search_seconds, limits.seconds)
        try:
            found = search.find(
                self.copy, pattern, paths, skipped_dirs=SKIPPED_DIRS, seconds=seconds,
                cancelled=limits.cancelled, max_hits=SEARCH_MATCHES,
            )
        except ValueError as exc:
            raise ToolError(f"pattern is not a valid regular expression: {exc}") from None
        except search.Stopped as exc:
            if exc.reason == "cancelled":
                raise ToolStopped(f"the search was stopped after {exc.seconds:.1f} s: the task was cancelled", "cancelled") from None
            why = "its limit" if seconds == self.search_seconds else "the task's time budget left"
            hint = "a path or a plainer pattern"
            if search.engine() == "python":
                hint += " (this machine searches with Python's re, where nested repeats such as (a+)+ backtrack)"
            raise ToolStopped(
                f"the search did not finish within {seconds:g} s ({why}) and was stopped; nothing is shown. "
                f"Narrow it: {hint}",
                "timed_out",
            ) from None
        text = "\n".join(f"{h.path}:{h.line}: {h.text}" for h in found.hits) if found.hits else "(no match)"
        if found.more:
            count = str(found.more) if found.counted_all else f"at least {found.more}"
            text += f"\n[... {count} more matches; narrow the pattern or the path ...]"
        return bounded(text)

    def _t_edit_file(self, args: dict[str, Any], limits: CallLimits) -> str:
        rel, target = self.resolve(args.get("path"), for_write=True)
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolError("old_text and new_text must be strings")
        if not target.is_file():
            raise ToolError(f"{rel!r} does not exist; use write_file to create it")
        updated = replace_once(rel, read_text(target), old, new)
        assert self.edits is not None
        self.edits.write(rel, target, updated)
        return f"edited {rel}: replaced {old.count(chr(10)) + 1} line(s) with {new.count(chr(10)) + 1}"

    def _t_write_file(self, args: dict[str, Any], limits: CallLimits) -> str:
        rel, target = self.resolve(args.get("path"), for_write=True)
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        if target.is_dir():
            raise ToolError(f"{rel!r} is a folder")
        existed = target.is_file()
        refuse_placeholders(rel, read_text(target) if existed else "", content, "content")
        assert self.edits is not None
        self.edits.write(rel, target, content)
        return f"{'replaced' if existed else 'created'} {rel} ({len(content.splitlines())} lines)"

    def _t_run_tests(self, args: dict[str, Any], limits: CallLimits) -> str:
        result = self.tests(limits)
        tail = str(result.get("output_tail") or result.get("output") or "")[-TEST_TAIL:]
        head = f"exit code {result.get('exit_code')} ({result.get('status')}, {result.get('seconds')} s): {result.get('command')}"
        return bounded(head + "\n" + tail)

    def _t_recall_memories(self, args: dict[str, Any], limits: CallLimits) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be a non-empty string")
        if self._recall is None:
            raise ToolError("memory is not available in this run")
        return bounded(self._recall(query) or "(no memory matches)")

    def _t_save_memory(self, args: dict[str, Any], limits: CallLimits) -> str:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ToolError("text must be a non-empty string")
        if self._save_memory is None:
            raise ToolError("memory is not available in this run")
        result = self._save_memory(text)
        if result.get("saved"):
            return f"saved (id {result.get('id') or result.get('memory', {}).get('id', '?')})"
        refused = result.get("refused")
        if isinstance(refused, dict) and refused.get("reason"):
            # The rule's own reason, so the model learns what not to offer again (no value is echoed).
            told = f"not saved: refused because {refused['reason']}"
            if refused.get("belongs"):
                told += f"; it belongs in {refused['belongs']}"
            if refused.get("suggestion"):
                told += f". This version may be saved: {refused['suggestion']}"
            return told
        reason = result.get("message") or result.get("reason") or result.get("error") or "refused"
        return f"not saved: {reason}"


def read_text(path: Path) -> str:
    """A file's text exactly as stored: no newline translation, undecodable bytes kept."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def page(rel: str, text: str, args: dict[str, Any]) -> str:
    """One page of a file's numbered lines: at most PAGE_LINES lines and PAGE_CHARS characters.

    The header names exactly the lines shown and where the next page starts, so
    reading page after page returns every line once; a line longer than a page
    is cut and continues at `start_column`.
    """
    lines = [line.removesuffix("\r") for line in text.split("\n")] if text else []
    if text.endswith("\n"):
        lines.pop()  # the final newline ends the last line
    total = len(lines)
    start = _int(args.get("start_line"), 1, "start_line")
    column = _int(args.get("start_column"), 1, "start_column")
    if total == 0:
        return f"{rel} (an empty file)"
    if start > total:
        raise ToolError(f"{rel!r} has {total} lines; start_line {start} is past the end")
    if column > 1 and column > len(lines[start - 1]):
        raise ToolError(f"line {start} of {rel!r} has {len(lines[start - 1])} characters; start_column {column} is past its end")
    end = _int(args.get("end_line"), start + PAGE_LINES - 1, "end_line")
    if end < start:
        raise ToolError("end_line is before start_line")
    end = min(end, start + PAGE_LINES - 1, total)
    width = len(str(end))
    room = PAGE_CHARS
    shown: list[str] = []
    number = start
    cut_at = 0  # the character of the last line shown where the page cut it (0: shown whole)
    while number <= end:
        line = lines[number - 1]
        first = column if number == start else 1
        piece = line[first - 1 :]
        prefix = f"{number:>{width}}  "
        if len(prefix) + len(piece) + 1 > room:
            if shown:
                break  # this line starts the next page
            cut_at = first - 1 + max(room - len(prefix) - 1, 1)
            shown.append(prefix + line[first - 1 : cut_at])
            break
        shown.append(prefix + piece)
        room -= len(prefix) + len(piece) + 1
        number += 1
    last = number if cut_at else number - 1
    head = f"{rel} (line {start} of {total}" if last == start else f"{rel} (lines {start}-{last} of {total}"
    if column > 1:
        head += f"; line {start} from character {column}"
    if cut_at:
        head += f"; line {last} cut at character {cut_at} of {len(lines[last - 1])}"
    head += ")"
    if cut_at:
        head += f"; more: read_file start_line={last} start_column={cut_at + 1}"
    elif last < total:
        head += f"; more: read_file start_line={last + 1}"
    return head + "\n" + "\n".join(shown)


_PLACEHOLDER = re.compile(r"\[redacted:([a-z0-9_]+)\]")


def refuse_placeholders(rel: str, content: str, text: str, field_name: str) -> None:
    """A ToolError when `text` holds a credential's placeholder that `content` does not hold as such.

    The model sees credentials as `[redacted:<kind>]`; writing that back would put
    the placeholder in the file in place of the value it never saw.
    """
    if "[redacted:" not in text:
        return
    for match in _PLACEHOLDER.finditer(text):
        if match.group() not in content:
            raise ToolError(
                f"{field_name} holds {match.group()}, which stands for a credential hidden from you"
                f"{_where_hidden(content, match.group(1))}; writing it would put the placeholder into {rel} "
                "in place of the real value, so nothing was changed. Leave the credential's line out of the "
                "change (edit_file on the lines around it), or read the value from the environment"
            )


def _where_hidden(content: str, kind: str) -> str:
    if not content:
        return ""
    found = scrub.find_secrets(content)
    lines = sorted({content.count("\n", 0, f.start) + 1 for f in found if f.kind == kind} or
                   {content.count("\n", 0, f.start) + 1 for f in found})
    if not lines:
        return ""
    return f" (in this file: line {', '.join(str(n) for n in lines[:10])})"


def replace_once(rel: str, content: str, old: str, new: str) -> str:
    """`content` with the one exact occurrence of `old` replaced; none or several is a ToolError."""
    if not old:
        raise ToolError("old_text is empty; quote the exact lines to replace (or use write_file)")
    count = content.count(old)
    if count == 0 and "[redacted:" in old:
        hidden = [m for m in _PLACEHOLDER.finditer(old) if m.group() not in content]
        if hidden:
            raise ToolError(
                f"old_text quotes {hidden[0].group()}, which stands for a credential hidden from you"
                f"{_where_hidden(content, hidden[0].group(1))}: the file holds the real value there, so the "
                "quote cannot match and nothing was changed. Quote only lines before or after it: the "
                "credential's line stays as it is"
            )
    refuse_placeholders(rel, content, new, "new_text")
    if count == 1:
        return content.replace(old, new, 1)
    if count == 0:
        raise ToolError(f"old_text does not occur in {rel}; nothing was changed. {closest(content, old)}")
    lines = [content.count("\n", 0, m.start()) + 1 for m in re.finditer(re.escape(old), content)]
    where = ", ".join(str(n) for n in lines[:10])
    raise ToolError(
        f"old_text occurs {count} times in {rel} (at lines {where}); nothing was changed. "
        "Include more surrounding lines so it matches exactly once."
    )


def closest(content: str, old: str) -> str:
    """The lines of `content` most like the first line of `old`, numbered, to correct a quote."""
    lines = content.splitlines()
    wanted = [ln for ln in old.splitlines() if ln.strip()] or [old]
    first = wanted[0].strip()
    best = difflib.get_close_matches(first, [ln.strip() for ln in lines], n=1, cutoff=0.4)
    if not best:
        return "No similar line found; read the file again."
    index = next(i for i, ln in enumerate(lines) if ln.strip() == best[0])
    lo, hi = max(0, index - 2), min(len(lines), index + len(wanted) + 2)
    shown = "\n".join(f"{i + 1:>4}  {lines[i]}" for i in range(lo, hi))
    return f"The closest lines are:\n{shown}"


def _int(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ToolError(f"{name} must be a line number")
    try:
        number = int(value)
    except ValueError:
        raise ToolError(f"{name} must be a line number") from None
    if number < 1:
        raise ToolError(f"{name} must be 1 or more")
    return number


def _glob(path: str, pattern: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return fnmatch(path, pattern) or ("/" not in pattern and fnmatch(name, pattern)) or (
        pattern.endswith("/**") and path.startswith(pattern[:-3] + "/")
    )


def outcome_of_tests(result: dict[str, Any]) -> str:
    """`passed`, `2 failed`, `timed out`... from a test run, for progress messages."""
    if result.get("status") == "timed_out":
        return "timed out"
    if result.get("exit_code") == 0:
        return "passed"
    tail = str(result.get("output_tail") or "")
    counts = re.findall(r"(\d+) (failed|error|errors)\b", tail)
    if counts:
        failed = sum(int(n) for n, _ in counts)
        return f"{failed} failed"
    m = re.search(r"FAILED \(([^)]*)\)", tail)
    if m:
        failed = sum(int(n) for n in re.findall(r"=(\d+)", m.group(1)))
        return f"{failed} failed"
    return f"exit code {result.get('exit_code')}"
