"""The agent's tools without a model: paging, the bounded search, portable schemas, credentials.

The search tests run the real ripgrep and the real fallback child process;
the fallback is chosen the way a machine without ripgrep chooses it, by a
PATH where `rg` is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from autocode.providers.agent import search
from autocode.providers.agent.loop import make_clean
from autocode.providers.agent.tools import (
    SCHEMAS,
    CallLimits,
    Edits,
    Toolbox,
    ToolError,
    ToolStopped,
)

ALL = ("read_file", "list_files", "search", "edit_file", "write_file")
MORE = re.compile(r"; more: read_file start_line=(\d+)(?: start_column=(\d+))?$")
RANGE = re.compile(r"\(lines? (\d+)(?:-(\d+))? of (\d+)")


def box(copy: Path, tmp_path: Path, **kw: Any) -> Toolbox:
    edits = Edits.open(copy, tmp_path / "originals.json")
    return Toolbox(copy, edits, allowed=ALL, **kw)


@pytest.fixture
def no_ripgrep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH without rg: the search falls back to Python's re in a child process."""
    bare = tmp_path / "bin-without-rg"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    assert search.engine() == "python"


def needs_ripgrep() -> None:
    assert shutil.which("rg"), "ripgrep is missing: scripts/sandbox-setup.sh installs it (make unit runs it)"


# --------------------------------------------------------------------------- read_file pages


def test_a_long_file_read_page_by_page_returns_every_line_exactly_once(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    lines = [f"line {i}: " + "x" * (i % 97) for i in range(1, 5001)]
    lines[2499] = "long " + "y" * 40_000 + " end"  # one line longer than any page
    (copy / "big.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tools = box(copy, tmp_path)
    seen: dict[int, str] = {}
    args: dict[str, Any] = {"path": "big.py"}
    pages = 0
    while True:
        pages += 1
        text = tools.call("read_file", args)
        head, _, body = text.partition("\n")
        first, last, total = RANGE.search(head).groups()  # type: ignore[union-attr]
        assert int(total) == 5000
        numbers = []
        for row in body.split("\n"):
            number, _, content = row.lstrip().partition("  ")
            numbers.append(int(number))
            seen[int(number)] = seen.get(int(number), "") + content
        # The header names exactly the lines the page holds.
        assert numbers == list(range(int(first), int(last or first) + 1)), head
        assert len(text) <= 16_000
        more = MORE.search(head)
        if more is None:
            break
        following = int(more.group(1))
        assert following == int(last or first) + (0 if more.group(2) else 1), head
        args = {"path": "big.py", "start_line": following}
        if more.group(2):
            args["start_column"] = int(more.group(2))
    assert [seen[n] for n in range(1, 5001)] == lines  # every line once, the long one whole
    assert sorted(seen) == list(range(1, 5001))
    assert pages > 13  # pages are cut by characters, not only by the 400-line count


def test_a_page_past_the_end_or_a_column_past_a_line_is_a_clear_error(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.txt").write_text("one\ntwo\n")
    (copy / "empty.txt").write_text("")
    tools = box(copy, tmp_path)
    assert tools.call("read_file", {"path": "a.txt"}) == "a.txt (lines 1-2 of 2)\n1  one\n2  two"
    assert tools.call("read_file", {"path": "empty.txt"}) == "empty.txt (an empty file)"
    with pytest.raises(ToolError, match="has 2 lines; start_line 3 is past the end"):
        tools.call("read_file", {"path": "a.txt", "start_line": 3})
    with pytest.raises(ToolError, match=r"line 1 of 'a\.txt' has 3 characters; start_column 9 is past its end"):
        tools.call("read_file", {"path": "a.txt", "start_column": 9})


# --------------------------------------------------------------------------- search


def _tree(copy: Path, outside: Path) -> None:
    (copy / "pkg").mkdir(parents=True)
    (copy / "pkg" / "mod.py").write_text("def add(a, b):\n    return a + b\n")
    (copy / "pkg" / "sub").mkdir()
    (copy / "pkg" / "sub" / "deep.py").write_text("x = 1\ndef deep():\n    pass\n")
    (copy / "z_last.py").write_text("def last():\n    pass\n")
    (copy / ".hidden.cfg").write_text("def in_a_dot_file\n")
    for skipped in (".git", ".autocode", "node_modules", "__pycache__"):
        (copy / skipped).mkdir()
        (copy / skipped / "x.py").write_text("def skipped():\n")
    (copy / "blob.bin").write_bytes(b"def \0binary\n")
    outside.mkdir()
    (outside / "secret.py").write_text("def outside():\n")
    (copy / "link").symlink_to(outside)
    (copy / "link.py").symlink_to(outside / "secret.py")


EXPECTED = [
    ".hidden.cfg:1: def in_a_dot_file",
    "pkg/mod.py:1: def add(a, b):",
    "pkg/sub/deep.py:2: def deep():",
    "z_last.py:1: def last():",
]


def test_search_with_ripgrep_stays_in_the_copy_and_skips_links_caches_and_binaries(tmp_path: Path) -> None:
    needs_ripgrep()
    copy = tmp_path / "copy"
    _tree(copy, tmp_path / "outside")
    tools = box(copy, tmp_path)
    assert tools.call("search", {"pattern": r"^def \w+"}).split("\n") == EXPECTED
    assert tools.call("search", {"pattern": "def", "path": "pkg/sub"}) == "pkg/sub/deep.py:2: def deep():"
    assert tools.call("search", {"pattern": "nothing-like-this"}) == "(no match)"
    with pytest.raises(ToolError, match="leads out of the repository through a link"):
        tools.call("search", {"pattern": "def", "path": "link"})
    with pytest.raises(ToolError, match="look-around"):
        tools.call("search", {"pattern": "(?<=a)b"})
    with pytest.raises(ToolError, match=r"(?s)not a valid regular expression: .*unclosed group"):
        tools.call("search", {"pattern": "("})


def test_the_fallback_finds_what_ripgrep_finds(tmp_path: Path, no_ripgrep: None) -> None:
    copy = tmp_path / "copy"
    _tree(copy, tmp_path / "outside")
    tools = box(copy, tmp_path)
    assert tools.call("search", {"pattern": r"^def \w+"}).split("\n") == EXPECTED
    with pytest.raises(ToolError, match="not a valid regular expression: missing \\)"):
        tools.call("search", {"pattern": "("})


def test_search_output_is_bounded_and_counts_what_it_leaves_out(tmp_path: Path) -> None:
    needs_ripgrep()
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "many.txt").write_text("hit " + "w" * 1000 + "\n" + "hit\n" * 500)
    text = box(copy, tmp_path).call("search", {"pattern": "hit"})
    rows = text.split("\n")
    assert len(rows) == 101 and rows[-1] == "[... 401 more matches; narrow the pattern or the path ...]"
    assert rows[0].endswith("[... omitted end of long line]") and len(rows[0]) < 400


def test_a_catastrophic_pattern_is_linear_in_ripgrep(tmp_path: Path) -> None:
    needs_ripgrep()
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "aaa.txt").write_text("a" * 50_000 + "!\n" + "a" * 50_000 + "\n")
    tools = box(copy, tmp_path, search_seconds=5)
    # Python's re would backtrack for ever on line 1; ripgrep answers at once.
    assert tools.call("search", {"pattern": "(a+)+$"}).startswith("aaa.txt:2: aaaa")


def test_a_catastrophic_pattern_in_the_fallback_is_an_error_at_its_limit(tmp_path: Path, no_ripgrep: None) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "aaa.txt").write_text("a" * 60 + "!\n")
    tools = box(copy, tmp_path, search_seconds=1)
    with pytest.raises(ToolStopped, match=r"did not finish within 1 s \(its limit\) and was stopped") as caught:
        tools.call("search", {"pattern": "(a+)+$"})
    assert caught.value.reason == "timed_out"
    # The task's time left is a tighter limit than the search's own.
    with pytest.raises(ToolStopped, match=r"within 0\.5 s \(the task's time budget left\)"):
        tools.call("search", {"pattern": "(a+)+$"}, CallLimits(seconds=0.5))


def test_a_cancel_stops_a_search_that_would_never_end(tmp_path: Path, no_ripgrep: None) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "aaa.txt").write_text("a" * 60 + "!\n")
    asked = threading.Event()
    threading.Timer(0.3, asked.set).start()
    tools = box(copy, tmp_path, search_seconds=600)
    with pytest.raises(ToolStopped, match="the task was cancelled") as caught:
        tools.call("search", {"pattern": "(a+)+$"}, CallLimits(cancelled=asked.is_set))
    assert caught.value.reason == "cancelled"


def test_a_pipe_in_the_copy_never_blocks_a_search(tmp_path: Path) -> None:
    needs_ripgrep()
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.py").write_text("def a():\n")
    os.mkfifo(copy / "pipe")
    tools = box(copy, tmp_path)
    assert tools.call("search", {"pattern": "def"}) == "a.py:1: def a():"  # the walk skips it
    with pytest.raises(ToolError, match="'pipe' is neither a file nor a folder"):
        tools.call("search", {"pattern": "def", "path": "pipe"})
    # Had ripgrep been pointed at it, the process would block on open(): the limit ends it.
    rg = shutil.which("rg")
    assert rg is not None
    with pytest.raises(search.Stopped):
        search.run_bounded([rg, "--no-config", "x", "pipe"], copy, seconds=0.5, cancelled=None, max_bytes=1000)


# --------------------------------------------------------------------------- schemas


PORTABLE_KEYS = {"type", "description", "properties", "required", "items", "enum"}


def _portable(node: dict[str, Any], where: str) -> list[str]:
    problems = [f"{where}: {key}" for key in node if key not in PORTABLE_KEYS]
    if node.get("type") == "object":
        props = node.get("properties")
        if not props:
            problems.append(f"{where}: an object with no properties (Gemini refuses it)")
        for key in node.get("required", []):
            if key not in (props or {}):
                problems.append(f"{where}: required {key} is not a property")
        if "required" in node and not node["required"]:
            problems.append(f"{where}: an empty required list")
        for key, sub in (props or {}).items():
            problems += _portable(sub, f"{where}.{key}")
    return problems


def test_every_tool_schema_is_in_the_subset_every_endpoint_takes() -> None:
    problems: list[str] = []
    for name, schema in SCHEMAS.items():
        assert set(schema) == {"type", "function"} and schema["function"]["name"] == name
        problems += _portable(schema["function"]["parameters"], name)
    assert problems == []
    assert "purpose" in SCHEMAS["run_tests"]["function"]["parameters"]["properties"]


# --------------------------------------------------------------------------- credentials, not paths


def test_the_model_sees_paths_as_they_are_and_credentials_redacted(tmp_path: Path) -> None:
    key = "sk-proj-" + "Qx7vT" * 9  # assembled at run time
    home = os.path.expanduser("~")
    source = f'CACHE_DIR = "/tmp/shop-cache"\nLOGS = "{home}/logs"\nOPENAI_API_KEY = "{key}"\n'
    clean = make_clean(tmp_path / "copy", tmp_path / "ws")
    seen = clean(source)
    assert 'CACHE_DIR = "/tmp/shop-cache"' in seen and f'LOGS = "{home}/logs"' in seen
    assert key not in seen and "[redacted:openai_key]" in seen
    # The copy's own path still reads as a relative one.
    assert clean(f"error in {tmp_path / 'copy'}/calc/ops.py") == "error in calc/ops.py"


def test_an_edit_against_a_redacted_value_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    key = "sk-proj-" + "Qx7vT" * 9
    copy = tmp_path / "copy"
    copy.mkdir()
    original = f'import os\n\nOPENAI_API_KEY = "{key}"\nTIMEOUT = 5\n'
    (copy / "settings.py").write_text(original)
    tools = box(copy, tmp_path)
    clean = make_clean(copy, None)
    view = clean(tools.call("read_file", {"path": "settings.py"}))
    assert '3  OPENAI_API_KEY = "[redacted:openai_key]"' in view
    quoted = 'OPENAI_API_KEY = "[redacted:openai_key]"\nTIMEOUT = 5'
    with pytest.raises(ToolError) as caught:
        tools.call("edit_file", {"path": "settings.py", "old_text": quoted, "new_text": quoted.replace("5", "9")})
    message = str(caught.value)
    assert "old_text quotes [redacted:openai_key], which stands for a credential hidden from you" in message
    assert "(in this file: line 3)" in message and "Quote only lines before or after it" in message
    with pytest.raises(ToolError, match=r"new_text holds \[redacted:openai_key\].*nothing was changed"):
        tools.call("edit_file", {"path": "settings.py", "old_text": "TIMEOUT = 5",
                                 "new_text": 'TIMEOUT = 5\nBACKUP_KEY = "[redacted:openai_key]"'})
    with pytest.raises(ToolError, match=r"content holds \[redacted:openai_key\]"):
        tools.call("write_file", {"path": "settings.py", "content": view})
    with pytest.raises(ToolError, match=r"content holds \[redacted:openai_key\]"):
        tools.call("write_file", {"path": "new_settings.py", "content": 'KEY = "[redacted:openai_key]"\n'})
    assert (copy / "settings.py").read_text() == original
    assert not (copy / "new_settings.py").exists()
    assert tools.edits is not None and tools.edits.files() == []
    # Lines around the credential can change; the credential stays as it was.
    assert tools.call("edit_file", {"path": "settings.py", "old_text": "TIMEOUT = 5", "new_text": "TIMEOUT = 9"})
    assert (copy / "settings.py").read_text() == original.replace("TIMEOUT = 5", "TIMEOUT = 9")


def test_a_file_that_holds_the_placeholder_text_itself_is_edited_as_usual(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "doc.md").write_text("Secrets show as `[redacted:openai_key]` in logs.\n")
    tools = box(copy, tmp_path)
    tools.call("edit_file", {"path": "doc.md", "old_text": "`[redacted:openai_key]` in logs",
                             "new_text": "`[redacted:openai_key]` in logs and reports"})
    assert "in logs and reports" in (copy / "doc.md").read_text()
    assert json.loads((tmp_path / "originals.json").read_text())["doc.md"].startswith("Secrets show")
