"""The task tools through MCP on a real git repository with the offline fixture provider: start,
status, evidence, a question answered as delegated; and every way an agent might try to decide
for the person (an approving tool, an answer while an approval waits, an answer as the person)
refused with where the person approves, nothing recorded."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.mcp import CLIENT_NAME, McpClient, build_task_repo, mcp_server, server_env
from support.tasks import autocode_json, run_dirs

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")

TEST_COMMAND = "python3 -m unittest discover -s tests -t ."
BRIEF = "Make greet() say goodbye too: apply change.patch"


def on_disk(snap: dict[str, Any], name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(snap["runDir"]) / name).read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_task_repo(tmp_path_factory.mktemp("mcp-tasks") / "project")


@pytest.fixture(scope="module")
def client(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    with mcp_server(repo, tmp_path_factory.mktemp("mcp-logs") / "mcp.log") as c:
        yield c


@pytest.fixture(scope="module")
def waiting_for_plan(client: McpClient) -> dict[str, Any]:
    """A task started through MCP whose question an agent answered as delegated."""
    first = client.call("start_task", {"brief": BRIEF, "test_command": TEST_COMMAND})
    assert not first.is_error, first.text
    snap = first.data
    assert snap["needs"]["kind"] == "answer_questions", snap["needs"]
    question = snap["needs"]["questions"][0]
    assert question["text"] in first.text and "delegated" in first.text
    status = client.ok("task_status", {"task_id": snap["id"]})
    assert status["id"] == snap["id"] and status["needs"]["kind"] == "answer_questions"

    answered = client.call("answer_question", {"task_id": snap["id"], "question_id": question["id"]})
    assert not answered.is_error, answered.text
    assert answered.data["needs"]["kind"] == "approve_plan"
    return answered.data


def test_a_delegated_answer_is_recorded_as_the_agents(waiting_for_plan: dict[str, Any]) -> None:
    ledger = on_disk(waiting_for_plan, "ledger.json")
    [answer] = ledger["answers"]
    assert answer["how"] == "delegated" and answer["kind"] == "delegated"
    assert answer["source"]["channel"] == f"mcp:{CLIENT_NAME}"
    # An agent's answer is not the person's pause resolved.
    assert waiting_for_plan["humanPauseStates"] == []


def test_the_plan_waits_for_the_person_and_the_reply_says_where(
    client: McpClient, waiting_for_plan: dict[str, Any], repo: Path
) -> None:
    task_id, revision = waiting_for_plan["id"], waiting_for_plan["needs"]["planRevision"]
    status = client.call("task_status", {"task_id": task_id})
    assert f"autocode task approve --workspace {repo} {task_id} --revision {revision}" in status.text

    evidence = client.ok("task_evidence", {"task_id": task_id})
    assert evidence["snapshot"]["id"] == task_id
    assert [a["how"] for a in evidence["ledger"]["answers"]] == ["delegated"]
    assert evidence["plan"] and evidence["approvals"] == []
    assert evidence["eventCount"] >= len(evidence["events"]) > 0


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("approve_plan", {"revision": 1}),
        ("autocode.task.approvePlan", {}),
        ("reject_plan", {"feedback": "no"}),
        ("approve_completion", {"confirm": "unproven"}),
        ("answer_question", {"question_id": "plan", "text": "approved"}),
    ],
)
def test_every_attempt_to_approve_is_refused_with_where_to_approve(
    client: McpClient, waiting_for_plan: dict[str, Any], repo: Path, tool: str, arguments: dict[str, Any]
) -> None:
    task_id = waiting_for_plan["id"]
    before = on_disk(waiting_for_plan, "state.json")
    reply = client.call(tool, {"task_id": task_id, **arguments})
    assert reply.error["kind"] == "approvalRefused"
    revision = waiting_for_plan["needs"]["planRevision"]
    assert f"autocode task approve --workspace {repo} {task_id} --revision {revision}" in reply.text
    assert f"approve plan r{revision}" in reply.text  # the editor's code action
    after = client.ok("task_status", {"task_id": task_id})
    assert after["state"] == "WAITING_FOR_PLAN_APPROVAL" and after["revision"] == waiting_for_plan["revision"]
    assert on_disk(waiting_for_plan, "state.json") == before
    approvals = Path(waiting_for_plan["runDir"]) / "approvals.json"
    assert not approvals.exists() or on_disk(waiting_for_plan, "approvals.json")["approvals"] == []


def test_an_answer_as_the_person_is_refused(client: McpClient, repo: Path) -> None:
    started = client.ok("start_task", {"brief": BRIEF, "test_command": TEST_COMMAND})
    question = started["needs"]["questions"][0]["id"]
    for how in ("typed", "chosen", "acceptedDefault"):
        reply = client.call(
            "answer_question", {"task_id": started["id"], "question_id": question, "text": "Use names", "how": how}
        )
        assert reply.error["kind"] == "delegatedOnly"
        assert "autocode task answer" in reply.text
    assert on_disk(started, "ledger.json")["answers"] == []
    assert client.ok("task_status", {"task_id": started["id"]})["needs"]["kind"] == "answer_questions"


def test_completion_waits_for_the_person_too(
    client: McpClient, waiting_for_plan: dict[str, Any], repo: Path
) -> None:
    """The person approves the plan in a terminal; the verified change then waits for them again."""
    task_id = waiting_for_plan["id"]
    code, snap = autocode_json(
        "task", "approve", "--workspace", str(repo), task_id,
        "--revision", str(waiting_for_plan["needs"]["planRevision"]),
    )
    assert code == 0 and snap["needs"]["kind"] == "approve_completion", snap
    before = (repo / "greet.py").read_text(encoding="utf-8")
    for tool, arguments in (("approve_completion", {}), ("answer_question", {"question_id": "x", "text": "yes"})):
        reply = client.call(tool, {"task_id": task_id, **arguments})
        assert reply.error["kind"] == "approvalRefused"
        assert f"autocode task approve-completion --workspace {repo} {task_id}" in reply.text
    assert client.ok("task_status", {"task_id": task_id})["state"] == "WAITING_FOR_COMPLETION_APPROVAL"
    assert (repo / "greet.py").read_text(encoding="utf-8") == before


def test_paths_and_ids_stay_inside_the_workspace(client: McpClient, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "manifest.json"
    outside.write_text("{}", encoding="utf-8")
    (repo / "link-out.json").symlink_to(outside)
    runs = run_dirs(repo)
    for manifest in (str(outside), "../manifest.json", "link-out.json", "/etc/passwd"):
        reply = client.call("start_task", {"brief": BRIEF, "manifest": manifest})
        assert reply.error["kind"] == "pathOutsideWorkspace", reply.text
        assert "/etc/passwd" not in reply.text or manifest == "/etc/passwd"
    reply = client.call("start_task", {"brief": BRIEF, "package": "../.."})
    assert reply.error["kind"] == "pathOutsideWorkspace"
    assert run_dirs(repo) == runs
    for task_id in ("../../etc", "../t-20260101-000000-abcdef", "x" * 200):
        reply = client.call("task_status", {"task_id": task_id})
        assert reply.is_error and reply.error["kind"] in ("taskNotFound", "invalidArguments"), reply.text
    # No tool takes another workspace.
    reply = client.call("list_tasks", {"workspace": str(tmp_path)})
    assert reply.error["kind"] == "invalidArguments" and "workspace" in reply.text
    listed = client.ok("list_tasks")
    assert {t["workspace"] for t in listed["tasks"]} == {str(repo)}
    ids = [t["id"] for t in listed["tasks"]]
    assert len(ids) > 1 and ids == sorted(ids, reverse=True)  # newest first, as docs/mcp.md says
    (repo / "link-out.json").unlink()


def test_a_slow_start_answers_at_once_and_the_task_goes_on(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With no time to wait (AUTOCODE_MCP_REPLY_WITHIN_S=0) start_task answers with the first
    snapshot the engine committed; the task carries on in the server and task_status follows it."""
    log = tmp_path_factory.mktemp("mcp-logs") / "quick.log"
    with mcp_server(repo, log, env=server_env(AUTOCODE_MCP_REPLY_WITHIN_S="0")) as quick:
        first = quick.ok("start_task", {"brief": BRIEF, "test_command": TEST_COMMAND})
        assert first["id"] and first["revision"] >= 1
        for _ in range(600):  # the engine's own pace: each look is one tool call
            snap = quick.ok("task_status", {"task_id": first["id"]})
            if snap["needs"].get("kind") == "answer_questions":
                break
            time.sleep(0.1)
        assert snap["needs"]["kind"] == "answer_questions", snap["state"]
        assert snap["revision"] >= first["revision"]
