"""File names git quotes (non-ASCII, spaces, quotes, newlines, tabs, bytes that are not UTF-8)
go through a whole task: the implementer's diff, the copy, the review, the evidence and the
apply. And a change that changes no file never ends COMPLETED."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autocode import diffnames
from autocode.tasks import Source, TaskOptions, TaskRun
from support import git
from support.tasks import answers_file, build_sample, cli_env

CLI = Source("cli", "tester")
LATIN1 = os.fsdecode(b"r\xe9sum\xe9.py")  # latin-1 bytes, not UTF-8: a surrogateescape str
NAMES = ["café.py", "with space.py", 'quote"d.py', "new\nline.py", "tab\there.py", LATIN1, "plain.py"]


def _write(repo: Path, rel: str, text: str) -> None:
    (repo / rel).write_bytes(text.encode())


def _read(repo: Path, rel: str) -> str:
    return (repo / rel).read_bytes().decode()


def _repo_with_names(tmp_path: Path) -> Path:
    """The unittest sample with one file of each awkward name, and names.patch (made by git,
    names quoted its default way) that changes each of them and adds one more."""
    repo, _ = build_sample("unittest", tmp_path / "textkit")
    for rel in NAMES:
        _write(repo, rel, "value = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "awkward names")
    for rel in NAMES:
        _write(repo, rel, "value = 2\n")
    _write(repo, "new ü file.py", "made = True\n")
    git(repo, "add", "-N", "new ü file.py")
    patch = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=True).stdout
    assert b'"a/caf\\303\\251.py"' in patch and b'"a/r\\351sum\\351.py"' in patch  # git quoted them
    git(repo, "reset", "-q")
    git(repo, "checkout", "-q", "--", ".")
    (repo / "new ü file.py").unlink()
    (repo / "names.patch").write_bytes(patch)
    git(repo, "add", "names.patch")
    git(repo, "commit", "-q", "-m", "the declared patch")
    return repo


def test_every_quoted_name_goes_through_diff_review_evidence_and_apply(tmp_path: Path) -> None:
    repo = _repo_with_names(tmp_path)
    run = TaskRun.start(repo, "apply names.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    expected = [*NAMES, "new ü file.py"]
    assert sorted(snap["needs"]["files"]) == sorted(expected)
    assert snap["needs"]["review"]["summary"].startswith(f"{len(expected)} file(s) changed")
    copy = Path(snap["copy"])
    assert all(_read(copy, rel) == "value = 2\n" for rel in NAMES)
    json.dumps(snap)  # the wire form of a latin-1 name is still JSON
    # The evidence against HEAD names every file, and git itself takes it.
    head_diff = (run.run_dir / "evidence" / "head.diff").read_bytes()
    assert sorted(diffnames.diff_paths(head_diff.decode("utf-8", "surrogateescape"))) == sorted(expected)
    check = subprocess.run(["git", "apply", "--check", "-"], cwd=repo, input=head_diff, capture_output=True)
    assert check.returncode == 0, check.stderr
    # names.patch changes no test: nothing proves it, so the person confirms it as unproven.
    assert snap["needs"]["confirmation"] == "unproven" and snap["needs"]["proof"]["status"] == "unproven"
    done = run.approve_completion(CLI, confirm="unproven").wire()
    assert done["state"] == "COMPLETED", done
    assert sorted(done["result"]["apply"]["written"]) == sorted(expected)
    for rel in NAMES:
        assert _read(repo, rel) == "value = 2\n", rel
    assert _read(repo, "new ü file.py") == "made = True\n"


def test_a_patch_git_applies_but_that_changes_no_content_fails_as_an_empty_change(tmp_path: Path) -> None:
    repo = _repo_with_names(tmp_path)
    # A mode change only: git applies it, but no file's content changes, so there is nothing to apply.
    (repo / "mode.patch").write_text('diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n'
                                      "old mode 100644\nnew mode 100755\n", encoding="utf-8")
    git(repo, "add", "mode.patch")
    git(repo, "commit", "-q", "-m", "a mode-only patch")
    before = {rel: (repo / rel).read_bytes() for rel in NAMES}
    run = TaskRun.start(repo, "apply mode.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["state"] == "FAILED", snap
    assert snap["error"]["kind"] == "emptyChange" and "café.py" in snap["error"]["message"]
    assert snap["result"]["status"] == "failed"
    assert {rel: (repo / rel).read_bytes() for rel in NAMES} == before
    assert git(repo, "diff", "--name-only").strip() == ""  # nothing tracked was changed


@pytest.mark.parametrize("name", NAMES)
def test_each_name_quoted_by_autocode_is_one_git_applies(tmp_path: Path, name: str) -> None:
    git(tmp_path, "init", "-q")
    _write(tmp_path, name, "a\n")
    patch = diffnames.file_diff(name, "a\n", "b\n") + diffnames.file_diff("x " + name, None, "new\n")
    assert diffnames.diff_paths(patch) == [name, "x " + name]
    proc = subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=patch.encode("utf-8", "surrogateescape"),
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert _read(tmp_path, name) == "b\n" and _read(tmp_path, "x " + name) == "new\n"


def test_names_in_renames_deletions_and_a_removed_line_that_looks_like_a_header(tmp_path: Path) -> None:
    diff = (
        'diff --git "a/old caf\\303\\251.py" "b/new\\tname.py"\n'
        "similarity index 100%\n"
        'rename from "old caf\\303\\251.py"\n'
        'rename to "new\\tname.py"\n'
        "diff --git a/gone.py b/gone.py\n"
        "deleted file mode 100644\n"
        "--- a/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n--- not a header\n-+++ nor this\n"
        "diff --git a/empty new.py b/empty new.py\nnew file mode 100644\n"
    )
    assert diffnames.diff_paths(diff) == ["old café.py", "new\tname.py", "gone.py", "empty new.py"]
    assert diffnames.renamed_from(diff) == {"old café.py"}
    assert diffnames.unquote('"broken') == '"broken'  # not a whole quoted name: kept as it is
    # A folder named "a" is not a prefix in a rename line; a form feed in a line is not a line end.
    moved = ("diff --git a/a/x.py b/b/x.py\nrename from a/x.py\nrename to b/x.py\n"
             "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-x\x0c\n--- y\n+z\n+w\n"
             "diff --git a/g.py b/g.py\n--- a/g.py\n+++ b/g.py\n@@ -1 +1 @@\n-1\r\n+2\r\n")
    assert diffnames.diff_paths(moved) == ["a/x.py", "b/x.py", "f.py", "g.py"]


def test_the_cli_prints_a_task_with_such_names_on_a_strict_terminal(tmp_path: Path) -> None:
    repo = _repo_with_names(tmp_path)
    answers = answers_file(tmp_path / "answers.json", {}, confirm="unproven")  # the patch adds no test
    env = cli_env(PYTHONIOENCODING="utf-8:strict")  # as a terminal with a UTF-8 locale has it
    proc = subprocess.run(
        [sys.executable, "-m", "autocode", "task", "start", "--workspace", str(repo), "--brief", "apply names.patch",
         "--scenario", "no-questions", "--answers", str(answers), "--no-interactive"],
        capture_output=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    out = proc.stdout + proc.stderr
    assert b"COMPLETED" in proc.stdout and b"Review: 8 file(s) changed" in out
    # A name with a newline or bytes that are not UTF-8 is shown quoted, as git shows it.
    assert b'"new\\nline.py"' in out and b'"r\\351sum\\351.py"' in out and b"caf\xc3\xa9.py" in out
    assert _read(repo, LATIN1) == "value = 2\n"


def test_quote_and_unquote_round_trip_every_byte() -> None:
    names = [os.fsdecode(bytes([b]) + b"x") for b in range(1, 256) if b != 0x2F]
    names += [os.fsdecode(bytes(range(1, 47)) + bytes(range(48, 256)))]
    for name in names:
        quoted = diffnames.quote(name)
        assert diffnames.unquote(quoted) == name, (name, quoted)
        assert "\n" not in quoted and "\t" not in quoted  # one header line, whatever the name
