"""`autocode memory` end to end: the real command in a subprocess, JSON answers and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import make_repo


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("AUTOCODE_UNATTENDED", None)

    def run(*args: str, code: int = 0, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "autocode", "memory", *args, "--json"],
            capture_output=True,
            text=True,
            env={**env, **(extra_env or {})},
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert proc.returncode == code, (proc.stdout, proc.stderr)
        data: dict[str, Any] = json.loads(proc.stdout)
        return data

    run.db = tmp_path / "data" / "autocode" / "memory.sqlite3"  # type: ignore[attr-defined]
    return run


def test_save_list_search_recall_delete(cli: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, origin="https://github.com/example/cli.git")
    saved = cli("save", "The ORM is SQLAlchemy 2 with typed models", "--agent", "implementer", "--workspace", str(repo), "--category", "stack")
    assert saved["saved"] and saved["scope"] == "project" and saved["repository"] == "origin:github.com/example/cli"
    team = cli("save", "Reviews need two approvals", "--shared", "--agent", "implementer")
    assert team["scope"] == "global"
    listed = cli("list", "--agent", "implementer", "--workspace", str(repo))
    assert {m["id"] for m in listed["memories"]} == {saved["id"], team["id"]}
    assert cli("list")["memories"][0]["id"] == team["id"], "no agent: the team's view, global only"
    found = cli("search", "SQLAlchemy models", "--agent", "implementer", "--workspace", str(repo))
    assert [h["id"] for h in found["memories"]] == [saved["id"]]
    recall = cli("recall", "add a model", "--agent", "implementer", "--workspace", str(repo))
    assert [h["id"] for h in recall["project"]] == [saved["id"]] and [h["id"] for h in recall["global"]] == [team["id"]]
    text = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", "recall", "--agent", "implementer", "--workspace", str(repo)],
        capture_output=True, text=True, check=True, env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")},
    ).stdout
    assert "## Project memories" in text and "SQLAlchemy" in text and "## Global memories" in text
    assert cli("delete", saved["id"], "--agent", "implementer", "--workspace", str(repo))["deleted"]["id"] == saved["id"]
    error = cli("delete", saved["id"], "--agent", "implementer", "--workspace", str(repo), code=4)
    assert error["error"]["kind"] == "memoryNotFound"


def test_refusal_and_skill_answers(cli: Any) -> None:
    refused = cli("save", "T-28's checks failed because the org's CI billing is blocked", code=3)
    assert refused["saved"] is False and refused["refused"]["kind"] == "task_key"
    assert refused["refused"]["suggestion"].startswith("Checks failed because")
    skill = cli("save", "To refresh the fixtures, run make fixtures and commit them", "--agent", "planner", code=6)
    assert skill["saved"] is False and skill["skill"] == "refresh-fixtures"
    assert [s["name"] for s in cli("skills", "--agent", "planner")["skills"]] == ["refresh-fixtures"]
    assert not cli.db.exists() or cli("list", "--agent", "planner")["memories"] == []


def test_save_says_by_its_exit_status_when_nothing_was_saved(cli: Any, tmp_path: Path) -> None:
    first = cli("save", "The integration tests need Redis running on port 6380")
    assert first["saved"] and first["similarTo"] is None
    again = cli("save", "the integration tests need Redis running on port 6380.", code=5)
    assert again["saved"] is False and again["duplicateOf"] == first["id"] and again["duplicateMethod"] == "exact"
    # Another port is another fact: saved (exit 0), and the close one is named.
    other = cli("save", "The integration tests need Redis running on port 6381")
    assert other["saved"] and other["similarTo"] == first["id"]
    assert {m["id"] for m in cli("list")["memories"]} == {first["id"], other["id"]}
    text = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", "save", "Integration tests need Redis running on port 6380"],
        capture_output=True, text=True, check=False, env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")},
    )
    assert text.returncode == 5 and f"duplicates memory {first['id']}" in text.stdout
    assert len(cli("list")["memories"]) == 2


def test_bad_input_is_an_error_that_writes_nothing(cli: Any, tmp_path: Path) -> None:
    error = cli("save", "Billing tests need a stub", "--scope", "project", code=2)
    assert error["error"]["kind"] == "noRepository"
    error = cli("save", "x", "--workspace", str(tmp_path / "missing"), code=2)
    assert error["error"]["kind"] == "workspaceInvalid" and "does not exist" in error["error"]["message"]
    plain = tmp_path / "plain"
    plain.mkdir()
    error = cli("list", "--workspace", str(plain), code=2)
    assert error["error"]["kind"] == "workspaceInvalid"
    error = cli("search", "x", "--limit", "0", code=2)
    assert "limit" in error["error"]["message"]
    assert cli("list")["memories"] == []


def test_promotion_and_reflection_need_a_person(cli: Any) -> None:
    memory = cli("save", "Always run make lint before pushing; CI rejects unformatted code")
    plan = cli("plan-promotion")
    assert [c["memoryId"] for c in plan["candidates"]] == [memory["id"]]
    refused = cli("apply-promotion", memory["id"], code=3, extra_env={"AUTOCODE_UNATTENDED": "1"})
    assert refused["error"]["kind"] == "refused"
    assert cli("list")["memories"][0]["id"] == memory["id"]
    applied = cli("apply-promotion", memory["id"])
    assert applied["removed"] == [memory["id"]] and applied["skills"]
    assert cli("list")["memories"] == []
    assert cli("reflect") == {"proposals": [], "applied": []}
    error = cli("reflect", "--approve", "lesson_nope", code=2)
    assert "no pending reflection proposal" in error["error"]["message"]


def test_help_lists_every_verb_and_imports_nothing_heavy() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for verb in ("save", "search", "list", "delete", "skills", "recall", "reflect", "plan-promotion", "apply-promotion"):
        assert verb in out
    code = (
        "import sys; from autocode.cli import build_parser; build_parser();"
        "print(','.join(m for m in ('psycopg', 'static_model', 'platformdirs', 'autocode.memory') if m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == ""
