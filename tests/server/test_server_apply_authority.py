"""The person's authority at the edge, over LSP with the real server process and real git
repositories: the change applied through the editor (`workspace/applyEdit`, unsaved buffers
merged), conflicts as a need, an apply that did not happen is never COMPLETED, approvals that
survive a dropped connection, and waiting tasks re-announced to a new session."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support import GREET_GOODBYE, GREET_SOURCES, git, make_repo
from support.lsp import (
    Session,
    _offset,
    close,
    connect,
    initialize,
    launch,
    stop,
    wait_until,
)

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

NOTE = "# my unsaved note\n"
GREET = "greet.py"
GREET_TEST = "tests/test_greet.py"


def _tree(repo: Path) -> dict[str, bytes]:
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and p.relative_to(repo).parts[0] not in (".git", ".autocode")
    }


async def _verified(session: Session, repo: Path) -> dict[str, Any]:
    """Start a task and bring it to completion approval by commands (no prompts answered)."""
    ws = str(repo)
    snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND, "workspace": ws})
    snap = await session.command(protocol.TASK_ANSWER, {
        "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER, "workspace": ws,
    })
    snap = await session.command(protocol.TASK_APPROVE_PLAN, {
        "taskId": snap["id"], "revision": snap["needs"]["planRevision"], "workspace": ws,
    })
    assert snap["needs"]["kind"] == "approve_completion", snap
    return dict(snap)


async def _client(tmp_path: Path, repo: Path, name: str, **kw: Any) -> Session:
    session = await connect("stdio", log_file=tmp_path / f"{name}.log")
    await initialize(session, preset="vscode", folders=[repo], **kw)
    session.choose = lambda params: None
    session.answer_question = lambda q: None
    session.review_plan = lambda p: {"decision": "later"}
    return session


async def wait_until_state(session: Session, task_id: str, state: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def reached() -> bool:
        found.update(await session.command(protocol.TASK_GET, {"taskId": task_id}))
        return found["state"] == state

    for _ in range(600):
        if await reached():
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {state}: {found.get('state')}")


def _open(session: Session, path: Path, text: str, version: int = 1) -> None:
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=version, text=text)
    ))


async def test_the_editor_applies_the_merge_into_an_unsaved_buffer(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp", opt_in=True)
    try:
        snap = await _verified(session, repo)
        greet = repo / GREET
        on_disk = greet.read_bytes()
        # The person has greet.py open with an edit they did not save.
        buffer = {"text": NOTE + greet.read_text()}
        _open(session, greet, buffer["text"], version=7)

        def editor(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            for step in params.edit.document_changes or []:
                assert isinstance(step, types.TextDocumentEdit)
                if step.text_document.uri == greet.as_uri():
                    assert step.text_document.version == 7  # the edit is for the buffer as it is
                    for e in step.edits:
                        start, end = _offset(buffer["text"], e.range.start), _offset(buffer["text"], e.range.end)
                        buffer["text"] = buffer["text"][:start] + e.new_text + buffer["text"][end:]
            return types.ApplyWorkspaceEditResult(applied=True)

        session.apply_edit = editor
        applied = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        # greet.py and the test that proves the change (tests/test_greet.py, not open in the editor)
        assert applied["needs"]["apply"]["via"] == "editor"
        assert applied["needs"]["apply"]["written"] == [GREET, GREET_TEST]
        [edit] = session.edits
        assert edit.label == f"AutoCode: apply changes for {BRIEF}"
        # The buffer holds both: the unsaved note and the task's change; it is never saved for the
        # person, so the change is not on disk yet and the task is not COMPLETED: it waits for the save.
        assert buffer["text"].startswith(NOTE) and "hello and goodbye" in buffer["text"]
        assert greet.read_bytes() == on_disk and session.saves == []
        assert applied["state"] == "WAITING_FOR_SAVE" and applied["needs"]["kind"] == "save_files", applied
        assert applied["needs"]["paths"] == [GREET] and applied["needs"]["apply"]["unsaved"] == [GREET]
        assert applied["needs"]["apply"]["writtenByEditor"] == [GREET]
        # The person saves: the server reads the disk back and the task completes.
        greet.write_text(buffer["text"])
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        done = await wait_until_state(session, snap["id"], "COMPLETED")
        assert done["result"]["apply"]["unsaved"] == [] and done["result"]["verified"] is True
    finally:
        await close(session)


async def test_a_refused_edit_is_not_completed_and_a_retry_applies(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp")
    try:
        snap = await _verified(session, repo)
        before = _tree(repo)
        _open(session, repo / GREET, (repo / GREET).read_text())  # open, nothing unsaved
        session.apply_edit = lambda params: types.ApplyWorkspaceEditResult(
            applied=False, failure_reason="the person closed the preview"
        )
        refused = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert refused["state"] == "WAITING_FOR_COMPLETION_APPROVAL" and refused["result"] is None
        assert refused["needs"]["apply"]["status"] == "not_applied"
        assert "the person closed the preview" in refused["needs"]["apply"]["message"]
        assert _tree(repo) == before
        await wait_until(
            lambda: any("the person closed the preview" in m.message for m in session.client.messages),
            what="the plain client to hear why",
        )
        session.apply_edit = None  # now the editor applies it
        done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert done["state"] == "COMPLETED" and done["result"]["apply"]["via"] == "editor"
        assert "goodbye" in (repo / GREET).read_text()
        again = await session.command_error(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert again.data["kind"] == "alreadyDecided" and "already approved at" in again.message
        assert again.data["state"] == "COMPLETED"
    finally:
        await close(session)


async def test_conflicts_over_lsp_wait_for_the_persons_choice(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp", opt_in=True)
    try:
        snap = await _verified(session, repo)
        greet = repo / GREET
        greet.write_text("def greet():\n    return 'hello, mine'\n")
        _open(session, greet, greet.read_text())
        before = _tree(repo)
        waiting = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert waiting["state"] == "WAITING_FOR_CONFLICT_RESOLUTION"
        assert waiting["needs"]["kind"] == "resolve_conflicts"
        assert waiting["needs"]["conflicts"] == [{
            "path": GREET, "reason": "overlap",
            "hunks": [{"mineStart": 2, "mineLines": 1, "theirsStart": 2, "theirsLines": 1}],
        }]
        assert _tree(repo) == before and session.edits == []
        await wait_until(
            lambda: any(c["task"]["needs"]["kind"] == "resolve_conflicts" for c in session.did_change),
            what="didChange with the conflicts",
        )
        bad = await session.command_error(
            protocol.TASK_RESOLVE_CONFLICTS, {"taskId": snap["id"], "choices": {GREET: "both"}}
        )
        assert bad.data["kind"] == "invalidArguments" and _tree(repo) == before
        done = await session.command(
            protocol.TASK_RESOLVE_CONFLICTS, {"taskId": snap["id"], "choices": {GREET: "markers"}}
        )
        assert done["state"] == "COMPLETED" and done["result"]["apply"]["choices"] == {GREET: "markers"}
        text = greet.read_text()
        assert "<<<<<<< mine" in text and "hello, mine" in text and "hello and goodbye" in text
        assert done["result"]["apply"]["via"] == "editor" and len(session.edits) == 1
    finally:
        await close(session)


async def test_a_client_without_apply_edit_gets_the_files_written(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        from support.lsp import capabilities

        caps = capabilities("neovim", opt_in=False)
        assert caps.workspace is not None
        caps.workspace.apply_edit = False
        await session.client.initialize_session(types.InitializeParams(
            capabilities=caps, client_info=types.ClientInfo(name="Neovim", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
        ))
        session.choose = lambda params: None
        snap = await _verified(session, repo)
        greet = repo / GREET
        before = _tree(repo)
        # greet.py is open with unsaved edits: writing behind the buffer would lose one side.
        _open(session, greet, NOTE + greet.read_text())
        refused = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert refused["state"] == "WAITING_FOR_COMPLETION_APPROVAL"
        assert f"{GREET} has unsaved edits" in refused["needs"]["apply"]["message"]
        assert _tree(repo) == before
        session.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=greet.as_uri()))
        )
        done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert done["state"] == "COMPLETED" and done["result"]["apply"]["via"] == "disk"
        assert session.edits == [] and "goodbye" in (repo / GREET).read_text()
    finally:
        await close(session)


async def test_an_approval_survives_a_connection_dropped_during_the_progress_handshake(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    first = await _client(tmp_path, repo, "a", progress=True)
    created: list[Any] = []
    never = asyncio.Event()

    async def hang(params: types.WorkDoneProgressCreateParams) -> None:
        created.append(params.token)
        await never.wait()  # the editor never answers the handshake

    first.client.protocol.fm.features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = hang
    ws = str(repo)
    snap = await first.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND, "workspace": ws})
    snap = await first.command(protocol.TASK_ANSWER, {
        "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER, "workspace": ws,
    })
    assert snap["needs"]["kind"] == "approve_plan"
    task_id, revision = snap["id"], snap["needs"]["planRevision"]
    seen = len(created)
    approving = asyncio.ensure_future(first.command(
        protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": revision, "workspace": ws}
    ))
    await wait_until(lambda: len(created) > seen, what="the progress handshake of the approval")
    # The editor dies right then: its end of the pipe closes.
    server = first.process
    assert server is not None and server.stdin is not None
    server.stdin.close()
    await asyncio.wait_for(server.wait(), timeout=60)
    never.set()
    with contextlib.suppress(RuntimeError, asyncio.CancelledError):
        await first.client.stop()  # pygls' client fails its own pending request futures here
    approving.cancel()

    # A new session: the approval was recorded, and what the task waits for now is announced.
    second = await _client(tmp_path, repo, "b", opt_in=True)
    try:
        await wait_until(
            lambda: any(c["task"]["id"] == task_id for c in second.did_change),
            timeout=60, what="the waiting task re-announced on initialized",
        )
        announced = [c["task"] for c in second.did_change if c["task"]["id"] == task_id][-1]
        assert announced["needs"]["kind"] == "approve_completion"
        approvals = json.loads((Path(announced["runDir"]) / "approvals.json").read_text(encoding="utf-8"))
        assert [a["kind"] for a in approvals["approvals"]] == ["plan"]
        late = await second.command_error(
            protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": revision}
        )
        assert late.data["kind"] == "alreadyDecided" and "already approved at" in late.message
        assert late.data["decidedAt"] == approvals["approvals"][0]["source"]["time"]
    finally:
        await close(second)


async def test_waiting_questions_are_asked_again_in_a_new_session(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    first = await _client(tmp_path, repo, "a", opt_in=True)
    snap = await first.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    await wait_until(lambda: first.questions, what="the first askQuestion")
    await close(first)
    second = await _client(tmp_path, repo, "b", opt_in=True)
    try:
        second.answer_question = lambda q: {"answer": NAMING_ANSWER, "how": "typed"}
        await wait_until(lambda: second.questions, timeout=60, what="the question asked again")
        assert second.questions[0]["taskId"] == snap["id"]
        await wait_until(lambda: second.reviews, timeout=60, what="the plan after the answer")
        got = await second.command(protocol.TASK_GET, {"taskId": snap["id"]})
        assert [(a["how"], a["channel"]) for a in got["answers"]] == [("typed", "lsp:Visual Studio Code")]
    finally:
        await close(second)


async def test_every_tcp_session_of_a_workspace_hears_every_change(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    process, port = await launch("tcp", tmp_path / "lsp.log")
    assert process is not None
    try:
        one = await connect("tcp", log_file=tmp_path / "lsp.log", process=process, port=port)
        await initialize(one, preset="neovim", folders=[repo], opt_in={"askQuestion": False, "reviewPlan": False})
        two = await connect("tcp", log_file=tmp_path / "lsp.log", process=process, port=port)
        await initialize(two, preset="vscode", folders=[repo], opt_in={"askQuestion": False, "reviewPlan": False})
        snap = await one.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(
            lambda: any(c["task"]["id"] == snap["id"] for c in two.did_change), what="the other session's didChange",
        )
        answered = await one.command(protocol.TASK_ANSWER, {
            "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER,
        })
        await wait_until(
            lambda: two.did_change[-1]["revision"] == answered["revision"], what="the answer reaching session two",
        )
        await close(one, stop_process=False)
        await close(two, stop_process=False)
    finally:
        await stop(process)


def _repo_with_more_change(root: Path, more: dict[str, str | None]) -> Path:
    """build_repo (the change and its proving test), with a change.patch that also creates (text)
    or deletes (None) the files in `more`."""
    make_repo(root, {**GREET_SOURCES, "old.py": "OLD = 1\n"})
    for rel, text in GREET_GOODBYE.items():
        (root / rel).write_text(text, encoding="utf-8")
    for rel, text in more.items():
        target = root / rel
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    patch = git(root, "diff", "--cached")
    git(root, "reset", "-q", "--hard")
    (root / "change.patch").write_text(patch, encoding="utf-8")
    git(root, "add", "change.patch")
    git(root, "commit", "-q", "-m", "add the patch")
    return root


async def test_an_unsaved_buffer_of_a_deleted_file_refuses_before_the_editor_changes(tmp_path: Path) -> None:
    """The task deletes old.py, which is open with unsaved edits, and changes greet.py, open too:
    the refusal comes before any WorkspaceEdit, so the editor is left as it was."""
    repo = _repo_with_more_change(tmp_path / "project", {"old.py": None})
    session = await _client(tmp_path, repo, "lsp")
    try:
        snap = await _verified(session, repo)
        before = _tree(repo)
        _open(session, repo / GREET, (repo / GREET).read_text())
        # old.py is open as it was; on disk it has changed since (saved from elsewhere), so the
        # buffer differs from the file the engine would delete.
        _open(session, repo / "old.py", (repo / "old.py").read_text())
        (repo / "old.py").write_text("OLD = 2  # saved from elsewhere\n", encoding="utf-8")
        before = _tree(repo)
        refused = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert refused["state"] == "WAITING_FOR_COMPLETION_APPROVAL", refused
        assert "old.py has unsaved edits" in refused["needs"]["apply"]["message"]
        assert session.edits == [], "the editor was changed although the apply was refused"
        assert _tree(repo) == before
    finally:
        await close(session)


async def test_a_failed_disk_write_leaves_the_editor_and_the_disk_unchanged(tmp_path: Path) -> None:
    """The task adds pkg/new.py (not open) and changes greet.py (open); `pkg` has become a file in
    the workspace, so the disk write fails: the editor is never asked, nothing is written."""
    repo = _repo_with_more_change(tmp_path / "project", {"pkg/new.py": "NEW = 1\n"})
    session = await _client(tmp_path, repo, "lsp")
    try:
        snap = await _verified(session, repo)
        (repo / "pkg").write_text("in the way\n", encoding="utf-8")
        before = _tree(repo)
        _open(session, repo / GREET, (repo / GREET).read_text())
        refused = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert refused["state"] == "WAITING_FOR_COMPLETION_APPROVAL", refused
        assert "writing the change failed" in refused["needs"]["apply"]["message"]
        assert "nothing was written" in refused["needs"]["apply"]["message"]
        assert session.edits == [], "the editor was changed although the apply was refused"
        assert _tree(repo) == before
        # Out of the way, the retry applies both.
        (repo / "pkg").unlink()
        done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert done["state"] == "COMPLETED", done
        assert (repo / "pkg" / "new.py").read_text() == "NEW = 1\n", done["result"]["apply"]
        assert "goodbye" in (repo / GREET).read_text()
    finally:
        await close(session)


async def test_an_editor_refusal_puts_the_disk_files_back(tmp_path: Path) -> None:
    """Disk files are written before the editor is asked; when it refuses they are put back."""
    repo = _repo_with_more_change(tmp_path / "project", {"pkg/new.py": "NEW = 1\n", "old.py": None})
    session = await _client(tmp_path, repo, "lsp")
    try:
        snap = await _verified(session, repo)
        before = _tree(repo)
        _open(session, repo / GREET, (repo / GREET).read_text())
        session.apply_edit = lambda params: types.ApplyWorkspaceEditResult(applied=False, failure_reason="no")
        refused = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert refused["state"] == "WAITING_FOR_COMPLETION_APPROVAL", refused
        assert len(session.edits) == 1
        assert _tree(repo) == before and not (repo / "pkg").exists()
    finally:
        await close(session)


async def test_a_change_made_through_another_server_process_reaches_this_client(tmp_path: Path) -> None:
    """Two editors, each with its own stdio server on the same repository: a task started and
    answered through server A reaches server B's client as autocode/task/didChange."""
    repo = build_repo(tmp_path / "project")
    quiet = {"askQuestion": False, "reviewPlan": False}
    one = await connect("stdio", log_file=tmp_path / "a.log")
    two = await connect("stdio", log_file=tmp_path / "b.log")
    try:
        await initialize(one, preset="neovim", folders=[repo], opt_in=quiet)
        await initialize(two, preset="vscode", folders=[repo], opt_in=quiet)
        assert one.process is not None and two.process is not None and one.process.pid != two.process.pid
        snap = await one.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(
            lambda: any(c["task"]["id"] == snap["id"] for c in two.did_change), timeout=30,
            what="server B's client hearing the task server A started",
        )
        answered = await one.command(protocol.TASK_ANSWER, {
            "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER,
        })
        await wait_until(
            lambda: any(c["task"]["id"] == snap["id"] and c["revision"] >= answered["revision"]
                        for c in two.did_change),
            timeout=30, what="the answer given through server A reaching server B's client",
        )
        revisions = [c["revision"] for c in two.did_change if c["task"]["id"] == snap["id"]]
        assert revisions == sorted(set(revisions)), revisions  # in order, never twice
    finally:
        await close(one)
        await close(two)
