"""`.autocode/.gitignore` in real git repositories: creation, upgrade, custom content, hidden record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autocode.record import (
    Convention,
    ObservedFacts,
    ensure_gitignore,
    gitignore_state,
    merge_record,
)
from autocode.record.gitignore import CURRENT_VERSION, TEMPLATES
from support import git, make_repo, write_files


def _ignored(repo: Path, rel: str) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", rel], cwd=repo).returncode == 0


def test_generated_file_shares_only_record_and_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    state = ensure_gitignore(repo)
    assert (state.action, state.state, state.template_version) == ("created", "current", CURRENT_VERSION)
    write_files(
        repo,
        {
            ".autocode/project.json": "{}",
            ".autocode/config.toml": "",
            ".autocode/runs/t1/events.jsonl": "",
            ".autocode/prep/p1/source/a.py": "",
            ".autocode/project.json.lock": "",
        },
    )
    assert not _ignored(repo, ".autocode/project.json")
    assert not _ignored(repo, ".autocode/config.toml")
    assert not _ignored(repo, ".autocode/.gitignore")
    for rel in (".autocode/runs/t1/events.jsonl", ".autocode/prep/p1/source/a.py", ".autocode/project.json.lock"):
        assert _ignored(repo, rel), rel
    assert gitignore_state(repo).record_hidden is False
    assert ensure_gitignore(repo).action == "unchanged"


@pytest.mark.parametrize("version", [v for v in TEMPLATES if v != CURRENT_VERSION])
def test_exact_older_template_is_upgraded(tmp_path: Path, version: int) -> None:
    repo = make_repo(tmp_path / "repo")
    write_files(repo, {".autocode/.gitignore": TEMPLATES[version]})
    state = gitignore_state(repo)
    assert (state.state, state.template_version) == ("outdated", version)
    result = merge_record(repo, ObservedFacts("pytest"), [Convention("Q?", "A")])
    assert result.written
    assert (repo / ".autocode/.gitignore").read_text() == TEMPLATES[CURRENT_VERSION]
    assert gitignore_state(repo).state == "current"


@pytest.mark.parametrize(
    "content",
    [
        TEMPLATES[1] + "extra-rule/\n",
        TEMPLATES[CURRENT_VERSION].replace("*\n", "*.log\n"),
        TEMPLATES[1].replace("\n", "\r\n"),
        b"# mine\n\xff\xfe odd bytes\nruns/\n",
        b"",
    ],
    ids=["older plus a rule", "edited current", "crlf", "odd bytes", "empty"],
)
def test_custom_content_is_preserved_byte_for_byte(tmp_path: Path, content: str | bytes) -> None:
    repo = make_repo(tmp_path / "repo")
    write_files(repo, {".autocode/.gitignore": content})
    before = (repo / ".autocode/.gitignore").read_bytes()
    assert gitignore_state(repo).state == "custom"
    assert ensure_gitignore(repo).action == "kept-custom"
    assert merge_record(repo, ObservedFacts("pytest"), []).written
    assert (repo / ".autocode/.gitignore").read_bytes() == before


def test_record_hidden_by_custom_rules_is_reported_with_the_fix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "build/\n.autocode/\n"})
    merge_record(repo, ObservedFacts("pytest", "python3 -m pytest"), [Convention("Q?", "A")])
    state = gitignore_state(repo)
    assert state.record_hidden is True
    assert state.hidden_by == ".gitignore:2: .autocode/"
    assert state.hint == "git add -f .autocode/project.json"

    text = subprocess.run(
        [sys.executable, "-m", "autocode", "doctor", "--workspace", str(repo)], capture_output=True, text=True
    )
    assert text.returncode == 0
    assert "hide the record" in text.stdout and "git add -f .autocode/project.json" in text.stdout
    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "autocode", "doctor", "--workspace", str(repo), "--json"],
            capture_output=True,
            text=True,
        ).stdout
    )
    assert report["gitignore"]["record_hidden"] is True

    git(repo, "add", "-f", ".autocode/project.json")
    assert gitignore_state(repo).record_hidden is False  # tracked now: shared despite the rule


def test_custom_rule_inside_autocode_folder_hiding_the_record(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write_files(repo, {".autocode/.gitignore": "*\n!.gitignore\n"})
    state = gitignore_state(repo)
    assert (state.state, state.record_hidden) == ("custom", True)
    assert state.hidden_by == ".autocode/.gitignore:1: *"


def test_outside_git_the_hidden_check_is_unknown(tmp_path: Path) -> None:
    state = ensure_gitignore(tmp_path)
    assert state.action == "created" and state.record_hidden is None and state.hint is None


def test_an_unreadable_gitignore_is_left_alone_and_learning_goes_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".autocode" / ".gitignore").mkdir(parents=True)
    (repo / ".autocode" / ".gitignore" / "mine.txt").write_text("kept")
    assert gitignore_state(repo).state == "unavailable"
    assert ensure_gitignore(repo).action == "left-unreadable"
    assert merge_record(repo, ObservedFacts("pytest"), []).written
    assert (repo / ".autocode" / ".gitignore" / "mine.txt").read_text() == "kept"
