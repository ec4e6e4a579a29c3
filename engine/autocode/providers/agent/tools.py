"""The tools a model may call in the prep copy, and the rules every call obeys.

Paths are relative to the copy. Absolute paths, `..`, a path through a link
that leads out of the copy, and anything under `.git` or `.autocode` are
refused with a `ToolError` (returned to the model as the tool's result, never
raised out of the loop). Every result is bounded in size; the loop scrubs it
before the model or the transcript sees it.

Writes go through `Edits`, which keeps the first content of every file the
model touched, so the task's change is the difference between those and the
files as they end up, whatever order the edits came in.

Kept whole: each tool's schema sits next to the rules its calls obey (path
checks, size bounds), which is what a review of "what can a model do here"
reads.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from autocode.tasks.store import write_text_atomic

RESULT_LIMIT = 16_000
PAGE_LINES = 400
LIST_LIMIT = 500
SEARCH_MATCHES = 100
SEARCH_FILE_BYTES = 1_000_000
TEST_TAIL = 6000
REFUSED_PARTS = frozenset({".git", ".autocode"})
SKIPPED_DIRS = frozenset({".git", ".autocode", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"})

READ_ONLY = ("read_file", "list_files", "search")
ALL_TOOLS = (*READ_ONLY, "edit_file", "write_file", "run_tests", "recall_memories", "save_memory")


class ToolError(Exception):
    """A tool call the engine refuses or cannot carry out; its text goes back to the model."""


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False},
        },
    }


_S = {"type": "string"}
_I = {"type": "integer", "minimum": 1}

SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": _fn(
        "read_file",
        "Read a file of the repository copy with numbered lines; long files come in pages of "
        f"{PAGE_LINES} lines (use start_line and end_line for the next page).",
        {"path": _S, "start_line": _I, "end_line": _I},
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
        "Search the repository's files for a regular expression (Python syntax); answers path:line: text.",
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
        {},
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
        tmp = target.with_name(f".{target.name}.autocode-tmp")
        try:
            tmp.write_bytes(content.encode("utf-8", "surrogateescape"))  # line endings as given
            if target.exists():
                os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def files(self) -> list[str]:
        return [rel for rel in self.originals if self.current(rel) != self.originals[rel]]

    def current(self, rel: str) -> str | None:
        path = self.copy / rel
        return read_text(path) if path.is_file() else None

    def diff(self) -> str:
        """A git-style unified diff from the first content of each touched file to its content now."""
        return "".join(unified_diff(rel, self.originals[rel], self.current(rel)) for rel in sorted(self.originals))


def unified_diff(rel: str, old: str | None, new: str | None) -> str:
    if old == new:
        return ""
    a_lines = (old or "").splitlines(keepends=True)
    b_lines = (new or "").splitlines(keepends=True)
    body: list[str] = []
    for line in difflib.unified_diff(
        a_lines,
        b_lines,
        fromfile=f"a/{rel}" if old is not None else "/dev/null",
        tofile=f"b/{rel}" if new is not None else "/dev/null",
    ):
        if line.startswith(("---", "+++")) and not line.endswith("\n"):
            line += "\n"
        if line[:1] in (" ", "-", "+") and not line.startswith(("---", "+++")) and not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        body.append(line)
    header = [f"diff --git a/{rel} b/{rel}\n"]
    if old is None:
        header.append("new file mode 100644\n")
    elif new is None:
        header.append("deleted file mode 100644\n")
    return "".join(header + body)


class Toolbox:
    """The tools over one prep copy. `call(name, args)` answers text or raises ToolError."""

    def __init__(
        self,
        copy: Path,
        edits: Edits | None,
        *,
        allowed: Iterable[str],
        run_tests: Callable[[], dict[str, Any]] | None = None,
        recall: Callable[[str], str] | None = None,
        save_memory: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self.copy = copy
        self.real = Path(os.path.realpath(copy))
        self.edits = edits
        self.allowed = tuple(allowed)
        self._run_tests = run_tests
        self._recall = recall
        self._save_memory = save_memory
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
                    if name.endswith(".autocode-tmp"):
                        continue
                    found.append(name if base == "." else f"{base}/{name}".replace(os.sep, "/"))
            self._listing = found
        extra = [r for r in (self.edits.originals if self.edits else {}) if r not in self._listing]
        return sorted({*self._listing, *[r for r in extra if (self.copy / r).is_file()]})

    # -- dispatch ------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any]) -> str:
        if name not in self.allowed:
            known = ", ".join(self.allowed)
            raise ToolError(f"unknown tool {name!r}; the tools here are: {known}")
        method: Callable[[dict[str, Any]], str] = getattr(self, "_t_" + name)
        return method(args)

    # -- the tools -------------------------------------------------------------

    def _t_read_file(self, args: dict[str, Any]) -> str:
        rel, target = self.resolve(args.get("path"))
        if target.is_dir():
            raise ToolError(f"{rel!r} is a folder; use list_files with path={rel!r}")
        if not target.is_file():
            raise ToolError(f"{rel!r} does not exist; list_files shows the files")
        data = target.read_bytes()
        if b"\0" in data[:8192]:
            return f"{rel}: a binary file of {len(data)} bytes (not shown)"
        lines = data.decode("utf-8", "replace").splitlines()
        start = _int(args.get("start_line"), 1, "start_line")
        end = _int(args.get("end_line"), start + PAGE_LINES - 1, "end_line")
        if end < start:
            raise ToolError("end_line is before start_line")
        end = min(end, start + PAGE_LINES - 1, len(lines))
        if start > max(len(lines), 1):
            raise ToolError(f"{rel!r} has {len(lines)} lines; start_line {start} is past the end")
        width = len(str(end))
        body = "\n".join(f"{i:>{width}}  {lines[i - 1]}" for i in range(start, end + 1))
        head = f"{rel} (lines {start}-{end} of {len(lines)})"
        if end < len(lines):
            head += f"; more: read_file start_line={end + 1}"
        return bounded(head + "\n" + body)

    def _t_list_files(self, args: dict[str, Any]) -> str:
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

    def _t_search(self, args: dict[str, Any]) -> str:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("pattern must be a non-empty regular expression")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"pattern is not a valid regular expression: {exc}") from None
        files = self.listing()
        raw_path = args.get("path")
        if raw_path not in (None, "", "."):
            rel, _ = self.resolve(raw_path)
            files = [f for f in files if f == rel or f.startswith(rel + "/")]
        hits: list[str] = []
        more = 0
        for rel in files:
            path = self.copy / rel
            try:
                if path.is_symlink() or path.stat().st_size > SEARCH_FILE_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    if len(hits) < SEARCH_MATCHES:
                        hits.append(f"{rel}:{number}: {line[:300]}")
                    else:
                        more += 1
        text = "\n".join(hits) if hits else "(no match)"
        if more:
            text += f"\n[... {more} more matches; narrow the pattern or the path ...]"
        return bounded(text)

    def _t_edit_file(self, args: dict[str, Any]) -> str:
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

    def _t_write_file(self, args: dict[str, Any]) -> str:
        rel, target = self.resolve(args.get("path"), for_write=True)
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        if target.is_dir():
            raise ToolError(f"{rel!r} is a folder")
        existed = target.is_file()
        assert self.edits is not None
        self.edits.write(rel, target, content)
        return f"{'replaced' if existed else 'created'} {rel} ({len(content.splitlines())} lines)"

    def _t_run_tests(self, args: dict[str, Any]) -> str:
        if self._run_tests is None:
            raise ToolError("no test command is known for this repository")
        result = self._run_tests()
        tail = str(result.get("output_tail") or result.get("output") or "")[-TEST_TAIL:]
        head = f"exit code {result.get('exit_code')} ({result.get('status')}, {result.get('seconds')} s): {result.get('command')}"
        return bounded(head + "\n" + tail)

    def _t_recall_memories(self, args: dict[str, Any]) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be a non-empty string")
        if self._recall is None:
            raise ToolError("memory is not available in this run")
        return bounded(self._recall(query) or "(no memory matches)")

    def _t_save_memory(self, args: dict[str, Any]) -> str:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ToolError("text must be a non-empty string")
        if self._save_memory is None:
            raise ToolError("memory is not available in this run")
        result = self._save_memory(text)
        if result.get("saved"):
            return f"saved (id {result.get('id') or result.get('memory', {}).get('id', '?')})"
        reason = result.get("message") or result.get("reason") or result.get("error") or "refused"
        return f"not saved: {reason}"


def read_text(path: Path) -> str:
    """A file's text exactly as stored: no newline translation, undecodable bytes kept."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def replace_once(rel: str, content: str, old: str, new: str) -> str:
    """`content` with the one exact occurrence of `old` replaced; none or several is a ToolError."""
    if not old:
        raise ToolError("old_text is empty; quote the exact lines to replace (or use write_file)")
    count = content.count(old)
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
