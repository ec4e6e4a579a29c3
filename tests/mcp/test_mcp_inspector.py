"""autocode-mcp driven by `@modelcontextprotocol/inspector --cli`, a real MCP client nobody here
wrote (scripts/mcp-setup.sh installs it; `make unit` runs that). Each call is one Inspector run
starting the real server, so this module keeps to one of each: tools/list (checked with --strict),
a save, a duplicate, a refusal of task trivia and of a credential, the recall resource, a delete,
and a task whose question it delegates and whose plan it cannot approve. test_mcp_memory.py covers every rule through
the SDK's client on one long-lived server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.mcp import build_task_repo, inspect, inspector, sqlite_contents

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")
if inspector() is None:
    pytest.skip(
        "the MCP Inspector is not installed: run `bash scripts/mcp-setup.sh` (make unit does; it needs npm "
        "and the npm registry), or name its launcher in AUTOCODE_TEST_MCP_INSPECTOR",
        allow_module_level=True,
    )

EXIT_TOOL_ERROR = 5
"""The Inspector's exit status when a tool answered isError (it prints the result first)."""


def credential() -> str:
    # Assembled at run time so no credential-shaped literal sits in the repository.
    return "ghp" + "_" + "Kp9Lm2Xv5Nb8Wc4Yd6Hf1Gj0Sa3TeU8vQZq3Rt7"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_task_repo(tmp_path_factory.mktemp("mcp-inspector") / "project")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inspector-logs")


def call(repo: Path, logs: Path, tool: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
    """`tools/call` through the Inspector: its exit status and the result it printed."""
    pairs = []
    for key, value in arguments.items():
        pairs.append(f"{key}={json.dumps(value) if not isinstance(value, str) else value}")
    options = ["--tool-name", tool] + (["--tool-arg", *pairs] if pairs else [])
    proc = inspect(repo, logs / f"{tool}.log", "tools/call", *options)
    assert proc.returncode in (0, EXIT_TOOL_ERROR), proc.stderr
    return proc.returncode, first_json(proc.stdout)


def first_json(text: str) -> dict[str, Any]:
    data, _ = json.JSONDecoder().raw_decode(text.lstrip())
    assert isinstance(data, dict)
    return data


def test_tools_list_passes_the_inspectors_strict_schema_check(repo: Path, logs: Path) -> None:
    proc = inspect(repo, logs / "list.log", "tools/list", "--strict")
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in first_json(proc.stdout)["tools"]}
    assert set(tools) == {
        "save_memory", "search_memory", "delete_memory",
        "start_task", "task_status", "task_evidence", "list_tasks", "answer_question",
    }
    assert set(tools["save_memory"]["inputSchema"]["properties"]) == {"content", "category", "scope", "shared"}
    assert set(tools["search_memory"]["inputSchema"]["properties"]) == {"query", "scope", "owner"}
    assert set(tools["delete_memory"]["inputSchema"]["properties"]) == {"id"}


def test_the_memory_rules_through_the_inspector(repo: Path, logs: Path) -> None:
    # Its own sentence: every module of this run shares one memory store.
    fact = "Schema changes in this repository start with `make migration-new`, never by editing old files."
    code, saved = call(repo, logs, "save_memory", content=fact, shared=True)
    assert code == 0 and saved["structuredContent"]["saved"] is True
    memory_id = saved["structuredContent"]["id"]

    code, again = call(repo, logs, "save_memory", content=fact, shared=True)
    assert code == 0
    assert again["structuredContent"]["saved"] is False and again["structuredContent"]["duplicateOf"] == memory_id

    code, trivia = call(repo, logs, "save_memory", content="PR #77 renamed the migrations folder.")
    assert code == EXIT_TOOL_ERROR and trivia["isError"] is True
    error = trivia["structuredContent"]["error"]
    assert error["kind"] == "memoryRefused" and error["reason"] == "pr_or_issue" and error["belongs"]

    secret = credential()
    code, refused = call(repo, logs, "save_memory", content=f"Use the token {secret} for the registry.")
    assert code == EXIT_TOOL_ERROR and refused["structuredContent"]["error"]["reason"] == "credential"
    assert secret not in json.dumps(refused) and not [c for c in sqlite_contents() if secret in c]

    proc = inspect(repo, logs / "recall.log", "resources/read", "--uri", "autocode://memory/recall")
    assert proc.returncode == 0, proc.stderr
    assert fact in first_json(proc.stdout)["contents"][0]["text"]

    code, deleted = call(repo, logs, "delete_memory", id=memory_id)
    assert code == 0 and deleted["structuredContent"]["deleted"]["id"] == memory_id
    assert fact not in sqlite_contents()


def test_a_task_through_the_inspector_never_gets_approved(repo: Path, logs: Path) -> None:
    code, started = call(
        repo, logs, "start_task", brief="Make greet() say goodbye too: apply change.patch",
        test_command="python3 -m unittest discover -s tests -t .",
    )
    assert code == 0, started
    snap = started["structuredContent"]
    question = snap["needs"]["questions"][0]["id"]
    code, answered = call(repo, logs, "answer_question", task_id=snap["id"], question_id=question)
    assert code == 0 and answered["structuredContent"]["needs"]["kind"] == "approve_plan"
    revision = answered["structuredContent"]["needs"]["planRevision"]

    code, refused = call(repo, logs, "answer_question", task_id=snap["id"], question_id="plan", text="approve")
    assert code == EXIT_TOOL_ERROR
    error = refused["structuredContent"]["error"]
    assert error["kind"] == "approvalRefused"
    assert f"autocode task approve --workspace {repo} {snap['id']} --revision {revision}" in error["message"]

    run_dir = Path(snap["runDir"])
    ledger = json.loads((run_dir / "ledger.json").read_text(encoding="utf-8"))
    assert [(a["how"], a["source"]["channel"].startswith("mcp:")) for a in ledger["answers"]] == [("delegated", True)]
    state = json.loads((run_dir / "state.json").read_text(encoding="utf-8"))
    assert state["state"] == "WAITING_FOR_PLAN_APPROVAL" and state["approvals"] == []
