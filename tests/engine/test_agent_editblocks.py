"""The edit-block text format and the exact-match rule, without a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from autocode.providers.agent import editblocks
from autocode.providers.agent.tools import (
    Edits,
    Toolbox,
    ToolError,
    outcome_of_tests,
    replace_once,
    unified_diff,
)


def test_blocks_and_reads_are_parsed_with_their_paths() -> None:
    reply = (
        "First I look.\nREAD calc/ops.py\n\n"
        "```python\ncalc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"
        "new/file.py\n<<<<<<< SEARCH\n=======\nX = 1\n>>>>>>> REPLACE\n"
    )
    blocks, reads, problems = editblocks.parse(reply)
    assert reads == ["calc/ops.py"] and problems == []
    assert [(b.path, b.search, b.replace) for b in blocks] == [
        ("calc/ops.py", "    return a - b\n", "    return a + b\n"),
        ("new/file.py", "", "X = 1\n"),
    ]


def test_a_cut_block_is_a_problem_not_a_guess() -> None:
    blocks, _, problems = editblocks.parse("calc/ops.py\n<<<<<<< SEARCH\nreturn a - b\n=======\nreturn a + b\n")
    assert blocks == [] and "no ======= or >>>>>>> REPLACE" in problems[0]
    assert editblocks.parse("just a summary, no block")[0:3] == ([], [], [])


def test_exact_match_once_or_a_clear_error() -> None:
    content = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return add(x, x)\n"
    assert replace_once("ops.py", content, "a - b", "a + b").count("a + b") == 1
    with pytest.raises(ToolError, match=r"occurs 2 times in ops.py \(at lines 1, 6\)"):
        replace_once("ops.py", content, "add(", "plus(")
    with pytest.raises(ToolError, match="does not occur") as err:
        replace_once("ops.py", content, "    return a -  b\n", "x")
    assert "   2      return a - b" in str(err.value)
    with pytest.raises(ToolError, match="old_text is empty"):
        replace_once("ops.py", content, "", "x")


def test_the_diff_covers_new_files_and_files_without_a_final_newline(tmp_path: Path) -> None:
    import subprocess

    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.txt").write_text("one\ntwo")  # no final newline
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x"], cwd=copy, check=True)
    edits = Edits.open(copy, tmp_path / "originals.json")
    box = Toolbox(copy, edits, allowed=["edit_file", "write_file"])
    box.call("edit_file", {"path": "a.txt", "old_text": "two", "new_text": "three"})
    box.call("write_file", {"path": "sub/new.txt", "content": "fresh\n"})
    diff = edits.diff()
    assert "\\ No newline at end of file" in diff and "new file mode 100644" in diff
    # The diff is what git would apply: undo it in the copy, then apply it again.
    (tmp_path / "c.diff").write_text(diff)
    subprocess.run(["git", "apply", "-R", str(tmp_path / "c.diff")], cwd=copy, check=True)
    assert (copy / "a.txt").read_text() == "one\ntwo" and not (copy / "sub" / "new.txt").exists()
    subprocess.run(["git", "apply", str(tmp_path / "c.diff")], cwd=copy, check=True)
    assert (copy / "a.txt").read_text() == "one\nthree"
    # Originals survive a new process: the change is still measured from the first content.
    assert Edits.open(copy, tmp_path / "originals.json").diff() == diff
    assert unified_diff("x", "same\n", "same\n") == ""


def test_test_outcomes_for_progress() -> None:
    assert outcome_of_tests({"exit_code": 0, "status": "finished"}) == "passed"
    assert outcome_of_tests({"exit_code": 1, "status": "finished", "output_tail": "FAILED (failures=2, errors=1)"}) == "3 failed"
    assert outcome_of_tests({"exit_code": 1, "status": "finished", "output_tail": "=== 2 failed, 3 passed in 0.1s ==="}) == "2 failed"
    assert outcome_of_tests({"exit_code": -9, "status": "timed_out"}) == "timed out"
    assert outcome_of_tests({"exit_code": 2, "status": "finished", "output_tail": "usage"}) == "exit code 2"


def test_an_edit_keeps_the_file_s_line_endings(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edits = Edits.open(copy, tmp_path / "originals.json")
    Toolbox(copy, edits, allowed=["edit_file"]).call("edit_file", {"path": "win.txt", "old_text": "two", "new_text": "2"})
    assert (copy / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"
    assert "\n-two\r\n+2\r\n" in edits.diff()


def test_a_path_with_a_null_byte_is_a_tool_error(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, None, allowed=["read_file"])
    with pytest.raises(ToolError, match="control character"):
        box.call("read_file", {"path": "a\0b"})


def test_an_unknown_reading_role_is_refused_before_anything_runs() -> None:
    from autocode.errors import UsageError
    from autocode.providers import ProviderConfig, check_config

    with pytest.raises(UsageError, match="reading_roles names unknown role"):
        check_config(ProviderConfig(provider="openai", base_url="http://127.0.0.1:9/v1", model="m", reading_roles=("typist",)))
    with pytest.raises(UsageError, match="azure provider, which needs base_url"):
        check_config(ProviderConfig(provider="azure", base_url="http://127.0.0.1:9", model="m"))
