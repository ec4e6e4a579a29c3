"""A whole task over LSP, for an opted-in client (over stdio, TCP and WebSocket) and for a
plain one; cancelling by command and through `$/progress`; a killed server.

The task runs the real engine with its offline fixture provider in a real git
repository whose own unittest suite verifies the change.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from autocode_lsp import protocol
from support import GREET_GOODBYE, GREET_SOURCES, git, make_repo
from support.lsp import (
    CLIENT_NAMES,
    Session,
    close,
    connect,
    initialize,
    logged,
    open_session,
    wait_until,
)

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

NAMING_ANSWER = "Use descriptive behaviour-based unittest method names."
TEST_COMMAND = "python3 -m unittest discover -s tests -t ."
BRIEF = "Make greet() say goodbye too: apply change.patch"


def build_repo(root: Path) -> Path:
    """A small unittest project with a committed patch the fixture implementer applies: the
    change and the test that proves it (so the task is verified)."""
    make_repo(root, GREET_SOURCES)
    for rel, text in GREET_GOODBYE.items():
        (root / rel).write_text(text, encoding="utf-8")
    patch = git(root, "diff")
    git(root, "checkout", "--", *GREET_GOODBYE)
    (root / "change.patch").write_text(patch, encoding="utf-8")
    git(root, "add", "change.patch")
    git(root, "commit", "-q", "-m", "add the patch")
    return root


def ledger_sources(snapshot: dict[str, Any]) -> list[str]:
    """`<kind> <channel>` of every answer in the run's ledger on disk."""
    ledger = json.loads((Path(snapshot["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
    return [f"{a['kind']} {a['source']['channel']}" for a in ledger["answers"]]


def approval_sources(snapshot: dict[str, Any]) -> list[str]:
    approvals = json.loads((Path(snapshot["runDir"]) / "approvals.json").read_text(encoding="utf-8"))
    return [a["source"]["channel"] for a in approvals["approvals"]]


# One opted-in server per transport, each with one of the two capability presets.
OPTED_IN = [("stdio", "vscode"), ("tcp", "neovim"), ("ws", "vscode"), ("socket", "neovim")]


@pytest_asyncio.fixture(scope="module", params=OPTED_IN, ids=lambda c: "-".join(c))
async def opted_in(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Session, Path]]:
    transport, preset = request.param
    repo = build_repo(tmp_path_factory.mktemp("optin") / "project")
    s = await open_session(transport, tmp_path_factory.mktemp("logs") / "lsp.log")
    s.preset = preset  # type: ignore[attr-defined]
    await initialize(s, preset=preset, folders=[repo], opt_in=True, progress=True)
    yield s, repo
    await close(s)


async def test_no_answer_and_review_later_leave_the_task_waiting(opted_in: tuple[Session, Path]) -> None:
    """The server never answers or approves on the person's behalf."""
    session, _ = opted_in
    session.answer_question = lambda q: None  # the person closed the question
    session.review_plan = lambda p: {"decision": "later"}
    first = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    task_id = first["id"]
    await wait_until(lambda: session.questions, what="askQuestion")
    await wait_until(lambda: logged(session, f"task {task_id}: question", "closed without an answer"),
                     what="the closed question handled")
    snap = await session.command(protocol.TASK_GET, {"taskId": task_id})
    assert snap["needs"]["kind"] == "answer_questions" and ledger_sources(snap) == []

    # Answered by command instead; the plan then waits, since the review said "later".
    question = first["needs"]["questions"][0]["id"]
    await session.command(
        protocol.TASK_ANSWER, {"taskId": task_id, "questionId": question, "text": NAMING_ANSWER}
    )
    await wait_until(lambda: session.reviews, what="reviewPlan")
    await wait_until(lambda: logged(session, f"task {task_id}: plan revision", "left for later"),
                     what="the review left for later handled")
    snap = await session.command(protocol.TASK_GET, {"taskId": task_id})
    assert snap["needs"]["kind"] == "approve_plan"
    assert approval_sources(snap) == []
    assert snap["humanPauseStates"] == ["WAITING_FOR_USER"]
    cancelled = await session.command(protocol.TASK_CANCEL, {"taskId": task_id})
    assert cancelled["state"] == "CANCELLED"
    await wait_until(lambda: session.did_change[-1]["revision"] == cancelled["revision"], what="didChange")
    session.questions.clear()
    session.reviews.clear()
    session.did_change.clear()


async def test_opted_in_client_drives_the_whole_task(opted_in: tuple[Session, Path]) -> None:
    session, repo = opted_in
    client = CLIENT_NAMES[session.preset]  # type: ignore[attr-defined]
    session.answer_question = lambda q: NAMING_ANSWER
    # The first plan goes back with feedback; the second one is approved.
    session.review_plan = lambda p: (
        {"decision": "reject", "feedback": "Keep the change to greet.py only."}
        if len(session.reviews) == 1 else {"decision": "approve"}
    )

    first = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    task_id = first["id"]
    await wait_until(
        lambda: any(c["task"]["needs"]["kind"] == "approve_completion" for c in session.did_change),
        timeout=120, what="the task to wait for completion approval",
    )
    # askQuestion carried the engine's question; reviewPlan the current plan revision.
    assert [q["question"]["id"] for q in session.questions] == ["test-naming"]
    assert session.questions[0]["taskId"] == task_id
    assert session.reviews[0]["planRevision"] >= 1 and "# Plan" in session.reviews[0]["plan"]
    assert session.reviews[0]["planUri"].startswith("file://")
    assert len(session.reviews) == 2
    assert session.reviews[1]["planRevision"] > session.reviews[0]["planRevision"]

    done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id})
    assert done["state"] == "COMPLETED" and done["done"] is True
    assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")

    # didChange: full snapshots of this task, revisions strictly increasing, ending at the last.
    await wait_until(lambda: session.did_change[-1]["revision"] == done["revision"], what="last didChange")
    revisions = [c["revision"] for c in session.did_change if c["task"]["id"] == task_id]
    assert revisions == sorted(set(revisions)) and len(revisions) >= 4
    assert all(c["task"]["revision"] == c["revision"] for c in session.did_change)
    states = [c["task"]["state"] for c in session.did_change]
    assert "WAITING_FOR_USER" in states and "WAITING_FOR_PLAN_APPROVAL" in states

    # Progress: every token began, then reported or ended, and ended last.
    reports = session.client.progress_reports
    assert reports, "the client declared workDoneProgress and got none"
    for values in reports.values():
        assert isinstance(values[0], types.WorkDoneProgressBegin)
        assert isinstance(values[-1], types.WorkDoneProgressEnd)
    assert any(isinstance(v, types.WorkDoneProgressReport) for vs in reports.values() for v in vs)

    # Recorded as the person's, with this client as the source.
    assert ledger_sources(done) == [f"human lsp:{client}"]
    assert set(approval_sources(done)) == {f"lsp:{client}"}
    assert set(done["humanPauseStates"]) == {
        "WAITING_FOR_USER", "WAITING_FOR_PLAN_APPROVAL", "WAITING_FOR_COMPLETION_APPROVAL",
    }
    approvals = json.loads((Path(done["runDir"]) / "approvals.json").read_text(encoding="utf-8"))
    assert [a["kind"] for a in approvals["approvals"]] == ["plan_rejected", "plan", "completion"]
    # No plain-client messages for an opted-in client.
    assert session.message_requests == [] and session.client.shown_documents == []

    # The learned convention shows in doctor.
    report = await session.command(protocol.DOCTOR)
    assert NAMING_ANSWER in json.dumps(report["report"])
    assert any(NAMING_ANSWER in m.message for m in session.client.log_messages)


async def test_forget_with_confirm_removes_only_the_record(opted_in: tuple[Session, Path]) -> None:
    session, repo = opted_in
    record = repo / ".autocode" / "project.json"
    assert record.exists(), "the completed task should have written the record"
    runs = sorted(p.name for p in (repo / ".autocode" / "runs").iterdir())
    err = await session.command_error(protocol.PROJECT_FORGET, {})
    assert err.data["kind"] == "confirmationRequired" and record.exists()
    result = await session.command(protocol.PROJECT_FORGET, {"confirm": True})
    assert result["removed"] is True and not record.exists()
    assert sorted(p.name for p in (repo / ".autocode" / "runs").iterdir()) == runs
    again = await session.command(protocol.PROJECT_FORGET, {"confirm": True})
    assert again["removed"] is False


async def test_task_errors_have_kinds(opted_in: tuple[Session, Path]) -> None:
    session, _ = opted_in
    missing = await session.command_error(protocol.TASK_GET, {"taskId": "t-20000101-000000-abcdef"})
    assert missing.code == -32803 and missing.data["kind"] == "taskNotFound"
    listed = await session.command(protocol.TASK_LIST)
    task_id = listed["tasks"][0]["id"]
    not_waiting = await session.command_error(
        protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": 1}
    )
    assert not_waiting.data["kind"] == "notAwaitingInput"


@pytest_asyncio.fixture(scope="module")
async def plain(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Session, Path]]:
    repo = build_repo(tmp_path_factory.mktemp("plain") / "project")
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    await initialize(s, preset="neovim", folders=[repo], opt_in=False)
    yield s, repo
    await close(s)


async def test_a_dismissed_question_records_nothing_and_cancel_ends_the_task(
    plain: tuple[Session, Path],
) -> None:
    session, _ = plain
    session.choose = lambda params: None  # the person closes the prompt without choosing
    first = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    task_id = first["id"]
    await wait_until(lambda: session.message_requests, timeout=30, what="the question prompt")
    # The server says it handled the dismissal; had it (wrongly) acted, it would have first.
    await wait_until(lambda: logged(session, f"task {task_id}: question", "dismissed; nothing recorded"),
                     what="the dismissal handled")
    snap = await session.command(protocol.TASK_GET, {"taskId": task_id})
    # The server decided nothing on the person's behalf: no answer, still waiting.
    assert snap["needs"]["kind"] == "answer_questions" and snap["revision"] == first["revision"]
    assert ledger_sources(snap) == []
    assert snap["humanPauseStates"] == []

    cancelled = await session.command(protocol.TASK_CANCEL, {"taskId": task_id})
    assert cancelled["state"] == "CANCELLED" and cancelled["done"] is True
    again = await session.command_error(protocol.TASK_CANCEL, {"taskId": task_id})
    assert again.code == -32803 and again.data["kind"] == "notAwaitingInput"
    late = await session.command_error(protocol.TASK_ANSWER, {
        "taskId": task_id, "questionId": first["needs"]["questions"][0]["id"], "text": NAMING_ANSWER,
    })
    assert late.data["kind"] == "notAwaitingInput"
    assert ledger_sources(await session.command(protocol.TASK_GET, {"taskId": task_id})) == []
    listed = await session.command(protocol.TASK_LIST)
    assert [(t["id"], t["state"]) for t in listed["tasks"]] == [(task_id, "CANCELLED")]
    session.message_requests.clear()


async def test_plain_client_uses_execute_command_and_standard_messages(
    plain: tuple[Session, Path],
) -> None:
    session, _ = plain
    # The prompt offers every way to answer; the proposed default is taken as a default.
    session.choose = lambda params: next(
        (a.title for a in params.actions or [] if a.title.startswith("Accept the proposed default")), None
    )

    first = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    task_id = first["id"]
    assert first["needs"]["kind"] == "answer_questions"
    assert first["needs"]["questions"][0]["choices"]

    # The question arrives as showMessageRequest; choosing answers it, then the plan opens.
    await wait_until(lambda: session.client.shown_documents, timeout=60, what="the plan to open")
    request = session.message_requests[0]
    assert "asks:" in request.message
    snap = await session.command(protocol.TASK_GET, {"taskId": task_id})
    assert snap["needs"]["kind"] == "approve_plan"
    assert session.client.shown_documents[0].uri == snap["needs"]["planUri"]
    await wait_until(
        lambda: any("run the code action 'AutoCode: approve plan r" in m.message for m in session.client.messages),
        what="the hint to approve the plan (naming the code action, not the command)",
    )

    # Send the plan back by command; the new revision opens as a document again.
    first_plan = snap["needs"]["planRevision"]
    replanned = await session.command(
        protocol.TASK_REJECT_PLAN, {"taskId": task_id, "feedback": "Touch greet.py only."}
    )
    assert replanned["needs"]["kind"] == "approve_plan"
    assert replanned["needs"]["planRevision"] > first_plan
    await wait_until(lambda: len(session.client.shown_documents) == 2, what="the new plan to open")
    assert session.client.shown_documents[1].uri == replanned["needs"]["planUri"]

    stale = await session.command_error(
        protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": first_plan}
    )
    assert stale.data["kind"] == "planRevisionMismatch"
    verified = await session.command(
        protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": replanned["needs"]["planRevision"]}
    )
    assert verified["needs"]["kind"] == "approve_completion"
    done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id})
    assert done["state"] == "COMPLETED"

    assert [a.title for a in request.actions or []] == [
        "Answer in a file…", "Accept the proposed default (not remembered)", "Let AutoCode decide",
    ]
    assert ledger_sources(done) == ["proposed_default lsp:Neovim"]
    assert set(approval_sources(done)) == {"lsp:Neovim"}
    approvals = json.loads((Path(done["runDir"]) / "approvals.json").read_text(encoding="utf-8"))
    assert [a["kind"] for a in approvals["approvals"]] == ["plan_rejected", "plan", "completion"]
    # Nothing custom ever reached the plain client.
    assert session.did_change == [] and session.questions == [] and session.reviews == []


async def test_killed_server_then_a_new_server_finishes_the_task(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    env = {**os.environ, "AUTOCODE_TEST_KILL_AT": "in:IMPLEMENTING"}
    first = await connect("stdio", log_file=tmp_path / "a.log", env=env)
    await initialize(first, preset="neovim", folders=[repo])
    snap = await first.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    task_id = snap["id"]
    question = snap["needs"]["questions"][0]["id"]
    snap = await first.command(
        protocol.TASK_ANSWER, {"taskId": task_id, "questionId": question, "text": NAMING_ANSWER}
    )
    assert snap["needs"]["kind"] == "approve_plan"
    # Approving starts the implementation, where the engine's test hook kills the server.
    with pytest.raises(Exception):  # noqa: B017 - the connection dies with the process
        await asyncio.wait_for(
            first.command(protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": snap["needs"]["planRevision"]}),
            timeout=60,
        )
    assert first.process is not None
    await asyncio.wait_for(first.process.wait(), timeout=30)
    assert first.process.returncode == -signal.SIGKILL
    await first.client.stop()

    second = await connect("stdio", log_file=tmp_path / "b.log")
    await initialize(second, preset="vscode", folders=[repo])
    try:
        listed = await second.command(protocol.TASK_LIST)
        left = [t for t in listed["tasks"] if t["id"] == task_id]
        assert left and (left[0]["state"], left[0]["interruptedIn"]) == ("INTERRUPTED", "IMPLEMENTING")
        resumed = await second.command(protocol.TASK_RESUME, {"taskId": task_id})
        assert resumed["needs"]["kind"] == "approve_completion"
        done = await second.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id})
        assert done["state"] == "COMPLETED"
        assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")
    finally:
        await close(second)


async def test_killed_client_then_a_new_server_finishes_the_task(tmp_path: Path) -> None:
    """The editor dies while the tests run: its server finishes that step, exits on its own,
    and a server started later takes the task to the end."""
    repo = build_repo(tmp_path / "project")
    first = await connect("stdio", log_file=tmp_path / "a.log")
    # This client cannot open documents: the plan is announced in a message instead.
    await initialize(first, preset="vscode", folders=[repo], progress=True, show_document=False)
    # The test command is not run by a shell: a small wrapper waits, then runs the real tests.
    slow_tests = (
        "python3 -c 'import subprocess, sys, time; time.sleep(2); "
        "sys.exit(subprocess.call(sys.argv[1:]))' " + TEST_COMMAND
    )
    snap = await first.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": slow_tests})
    task_id = snap["id"]
    snap = await first.command(protocol.TASK_ANSWER, {
        "taskId": task_id, "questionId": snap["needs"]["questions"][0]["id"], "text": NAMING_ANSWER,
    })
    await wait_until(
        lambda: any("is ready for review" in m.message for m in first.client.messages),
        what="the plan announcement",
    )
    assert first.client.shown_documents == []
    approving = asyncio.ensure_future(first.command(
        protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": snap["needs"]["planRevision"]}
    ))
    await wait_until(
        lambda: any(isinstance(v, types.WorkDoneProgressReport) and "verifying" in (v.message or "")
                    for vs in first.client.progress_reports.values() for v in vs),
        timeout=60, what="verification to start",
    )
    # What the operating system does when the editor is killed: its end of the pipe closes.
    server = first.process
    assert server is not None and server.stdin is not None and server.returncode is None
    server.stdin.close()
    await asyncio.wait_for(server.wait(), timeout=60)
    assert server.returncode == 0
    approving.cancel()
    await first.client.stop()
    log_text = (tmp_path / "a.log").read_text(encoding="utf-8")
    assert " ERROR " not in log_text, log_text  # a vanished client is not a server error

    second = await connect("stdio", log_file=tmp_path / "b.log")
    await initialize(second, preset="neovim", folders=[repo])
    try:
        listed = await second.command(protocol.TASK_LIST)
        left = [t for t in listed["tasks"] if t["id"] == task_id]
        assert left and left[0]["needs"]["kind"] == "approve_completion", left
        # The wrapper gives no per-test output, so nothing proves the change: the person confirms.
        assert left[0]["needs"]["confirmation"] == "unproven" and left[0]["needs"]["proof"]["status"] == "unproven"
        done = await second.command(
            protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id, "confirm": "unproven"}
        )
        assert done["state"] == "COMPLETED"
        assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")
        assert ledger_sources(done) == ["human lsp:Visual Studio Code"]
        assert approval_sources(done) == ["lsp:Visual Studio Code", "lsp:Neovim"]
    finally:
        await close(second)


async def test_cancelling_the_progress_cancels_the_task(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    await initialize(session, preset="vscode", folders=[repo], progress=True)
    try:
        slow = "python3 -c 'import time; time.sleep(60)'"
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": slow})
        task_id = snap["id"]
        question = snap["needs"]["questions"][0]["id"]
        snap = await session.command(
            protocol.TASK_ANSWER, {"taskId": task_id, "questionId": question, "text": NAMING_ANSWER}
        )
        known = set(session.client.progress_reports)
        approving = asyncio.ensure_future(session.command(
            protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": snap["needs"]["planRevision"]}
        ))

        def verifying_token() -> str | None:
            for token, values in session.client.progress_reports.items():
                if token not in known and any(
                    isinstance(v, types.WorkDoneProgressReport) and "verifying" in (v.message or "")
                    for v in values
                ):
                    return str(token)
            return None

        await wait_until(lambda: verifying_token() is not None, timeout=60, what="verification to run")
        # The tests run in an engine thread: the server keeps answering meanwhile.
        info = await asyncio.wait_for(session.command(protocol.PROTOCOL_INFO), timeout=15)
        assert info["protocolVersion"] == protocol.PROTOCOL_VERSION and not approving.done()
        session.client.window_work_done_progress_cancel(
            types.WorkDoneProgressCancelParams(token=verifying_token() or "")
        )
        result = await asyncio.wait_for(approving, timeout=60)
        assert result["state"] == "CANCELLED"
    finally:
        await close(session)


async def test_the_server_leaves_at_once_when_the_editor_closes_mid_verification(tmp_path: Path) -> None:
    """The editor closes while an approval waits for the project's tests: `shutdown` is answered
    (it failed in pygls with a request under way) and `exit` ends the process at once (it waited
    for the tests, 60 s here, or for the editor to kill it, which left the run's report folder
    in the temporary folder)."""
    repo = build_repo(tmp_path / "project")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
    await initialize(session, preset="vscode", folders=[repo])
    slow = "python3 -c 'import time; time.sleep(60)'"
    snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": slow})
    snap = await session.command(protocol.TASK_ANSWER, {
        "taskId": snap["id"], "questionId": snap["needs"]["questions"][0]["id"], "text": NAMING_ANSWER})
    approving = asyncio.ensure_future(session.command(
        protocol.TASK_APPROVE_PLAN, {"taskId": snap["id"], "revision": snap["needs"]["planRevision"]}))
    await wait_until(lambda: any(p.name.startswith("autocode-report-") for p in scratch.iterdir()),
                     timeout=60, what="a verification under way")
    assert not approving.done()
    approving.add_done_callback(lambda f: f.cancelled() or f.exception())  # never answered: the server left
    await asyncio.wait_for(close(session), timeout=30)
    assert session.process is not None and session.process.returncode == 0
    assert [p.name for p in scratch.iterdir() if p.name.startswith("autocode-report-")] == []
