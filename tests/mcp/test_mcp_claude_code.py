"""A real agent, Claude Code (`claude -p`, installed from npm by scripts/mcp-setup.sh), uses
autocode-mcp as its memory and its supervisor: its model is a script on 127.0.0.1 that calls
the tools as a model would. The saves go by the memory rules, the task it starts asks and
plans, its delegated answer is recorded as the agent's, and its attempt to approve the plan
comes back refused with where the person approves."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.mcp import build_task_repo, claude, server_command, server_env, sqlite_contents
from support.messages_script import serve, text, tool_results, tool_use

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")
if claude() is None:
    pytest.skip(
        "Claude Code is not installed: run `bash scripts/mcp-setup.sh` (make unit does; it needs npm and "
        "the npm registry), or name its `claude` in AUTOCODE_TEST_CLAUDE",
        allow_module_level=True,
    )

FACT = "Database migrations in this repository run with `make migrate`, never by hand."
TRIVIA = "PR #77 renamed the migrations folder."
BRIEF = "Make greet() say goodbye too: apply change.patch"
TEST_COMMAND = "python3 -m unittest discover -s tests -t ."


def result_of(body: dict[str, Any], call: dict[str, Any]) -> str:
    return tool_results(body)[call["id"]]


def snapshot_in(result: str) -> dict[str, Any]:
    """The task snapshot in a tool result (Claude Code passes the structured content as JSON)."""
    assert "{" in result, result[:1000]
    start = result.index("{")
    data, _ = json.JSONDecoder().raw_decode(result[start:])
    assert isinstance(data, dict)
    return data


def test_claude_code_saves_memories_starts_a_task_and_cannot_approve_it(tmp_path: Path) -> None:
    repo = build_task_repo(tmp_path / "project")
    config = tmp_path / "mcp.json"
    command = server_command(None, "--log-file", str(tmp_path / "mcp.log"), "--agent", "claude-code")
    config.write_text(json.dumps({"mcpServers": {"autocode": {
        "type": "stdio", "command": command[0], "args": command[1:], "env": server_env(),
    }}}), encoding="utf-8")

    save = tool_use("mcp__autocode__save_memory", {"content": FACT})
    trivia = tool_use("mcp__autocode__save_memory", {"content": TRIVIA})
    start = tool_use("mcp__autocode__start_task", {"brief": BRIEF, "test_command": TEST_COMMAND})
    calls: dict[str, dict[str, Any]] = {}

    def delegate(body: dict[str, Any]) -> list[dict[str, Any]]:
        snap = snapshot_in(result_of(body, start))
        question = snap["needs"]["questions"][0]["id"]
        calls["answer"] = tool_use("mcp__autocode__answer_question", {"task_id": snap["id"], "question_id": question})
        return [calls["answer"]]

    def approve(body: dict[str, Any]) -> list[dict[str, Any]]:
        snap = snapshot_in(result_of(body, calls["answer"]))
        calls["approve"] = tool_use(
            "mcp__autocode__answer_question", {"task_id": snap["id"], "question_id": "plan", "text": "approved"}
        )
        return [calls["approve"]]

    with serve([[save], [trivia], [start], delegate, approve, [text("done")]]) as endpoint:
        home = tmp_path / "home"
        home.mkdir()
        env = {
            **server_env(), "HOME": str(home), "ANTHROPIC_BASE_URL": endpoint.url, "ANTHROPIC_API_KEY": "test-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
            # Wait for the MCP server before the first turn (its tools offered from the start), however
            # slowly this machine starts it: Claude Code's own connect timeout is 5 s.
            "MCP_CONNECTION_NONBLOCKING": "false", "MCP_CONNECT_TIMEOUT_MS": "120000", "MCP_TIMEOUT": "120000",
        }
        proc = subprocess.run(
            [str(claude()), "-p", "Remember how migrations run, then make greet() say goodbye.",
             "--output-format", "json", "--mcp-config", str(config), "--strict-mcp-config",
             "--allowedTools", "mcp__autocode"],
            cwd=repo, env={**env, "PATH": env["PATH"] + os.pathsep + os.environ.get("PATH", "")},
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert not endpoint.failures, endpoint.failures
        last = endpoint.requests[-1]

    offered = {t["name"] for t in endpoint.requests[0].get("tools", [])}
    assert {"mcp__autocode__save_memory", "mcp__autocode__start_task"} <= offered
    assert not [n for n in offered if n.startswith("mcp__autocode__") and "approv" in n]

    assert '"saved":true' in result_of(last, save).replace(" ", "")
    refused = result_of(last, trivia)
    assert "not saved" in refused and "memoryRefused" in refused and "pr_or_issue" in refused
    assert FACT in sqlite_contents() and TRIVIA not in sqlite_contents()

    denied = result_of(last, calls["approve"])
    assert "approvalRefused" in denied and "autocode task approve --workspace" in denied

    snap = snapshot_in(result_of(last, calls["answer"]))
    assert snap["state"] == "WAITING_FOR_PLAN_APPROVAL"
    ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
    assert [(a["how"], a["source"]["channel"]) for a in ledger["answers"]] == [("delegated", "mcp:claude-code")]
    state = json.loads((Path(snap["runDir"]) / "state.json").read_text(encoding="utf-8"))
    assert state["state"] == "WAITING_FOR_PLAN_APPROVAL" and state["approvals"] == []
