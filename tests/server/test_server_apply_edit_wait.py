"""While the editor has not answered `workspace/applyEdit`, the task that sent it holds none of
its locks (issue 35), shown from outside the waiting call: real server processes over stdio, a
real git repository, and the CLI in its own process.

Session A approves the completion with greet.py open; its editor takes the edit and does not
answer until the test lets it. Meanwhile another server process on the same repository (session
B) and the CLI read the task at once and see it handed to the editor; B's cancel and second
approval are refused at once (the editor has the change), B's resume runs nothing, and so is a
cancel from A's own client. Once the editor answers, A's approval records the task as COMPLETED through the editor.

If the engine kept the run's lock while it waited, B's cancel would only leave a request and
its approval would wait for the lock (and the server would answer with the task as it stands
after its reply deadline): neither is the refusal asserted here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import to_fs_path
from test_server_apply_authority import (
    GREET,
    GREET_TEST,
    _client,
    _open,
    _verified,
    wait_until_state,
)
from test_server_tasks_flow import build_repo

from autocode_lsp import protocol
from support.lsp import Session, _offset, child_env, close, connect, initialize
from support.tasks import cli_env

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

WAIT = 120.0
"""A bound on a hang only: each wait ends as soon as what it waits for happens."""


class HeldEditor:
    """Session A's answer to `workspace/applyEdit`: it takes the edit into the open buffers,
    then answers only once `release` is set, as an editor showing the person a confirmation."""

    def __init__(self, buffers: dict[str, str]) -> None:
        self.buffers = buffers
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits.append(params)
        self.asked.set()
        await asyncio.wait_for(self.release.wait(), timeout=WAIT * 3)
        for step in params.edit.document_changes or []:
            assert isinstance(step, types.TextDocumentEdit)
            uri = step.text_document.uri
            text = self.buffers[uri]
            for e in step.edits:
                text = text[:_offset(text, e.range.start)] + e.new_text + text[_offset(text, e.range.end):]
            self.buffers[uri] = text
        return types.ApplyWorkspaceEditResult(applied=True)


async def _waiting_client(tmp_path: Path, repo: Path) -> Session:
    """Session A: opted in (it saves the buffers it was asked to), and its server answers a
    command only when the engine is done, so the approval stays in flight while the editor holds
    the edit (the default answers with the task as it stands after a few seconds)."""
    env = {**child_env(), "AUTOCODE_LSP_REPLY_WITHIN_S": str(int(WAIT * 5))}
    session = await connect("stdio", log_file=tmp_path / "a.log", env=env)
    await initialize(session, preset="vscode", folders=[repo], opt_in=True)
    session.answer_question = lambda q: None
    session.review_plan = lambda p: {"decision": "later"}
    return session


async def _cli_json(repo: Path, *args: str) -> dict[str, Any]:
    """`autocode task ... --json` in its own process, bounded."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "autocode", "task", *args, "--workspace", str(repo), "--json",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=WAIT)
    assert proc.returncode == 0, (args, proc.returncode, err.decode())
    data: dict[str, Any] = json.loads(out)
    return data


async def test_while_the_editor_holds_the_edit_other_processes_read_and_are_refused_at_once(
    tmp_path: Path,
) -> None:
    # lazy: the engine part may not be merged (importorskip above)
    from autocode.tasks import store
    from autocode.tasks.core import EDITOR_MARK
    from autocode.tasks.state import runs_root

    repo = build_repo(tmp_path / "project")
    one = await _waiting_client(tmp_path, repo)
    two: Session | None = None
    greet = repo / GREET
    held = HeldEditor({})
    approving: asyncio.Future[Any] | None = None
    try:
        snap = await _verified(one, repo)
        task_id = snap["id"]
        run_dir = Path(snap["runDir"])
        held.buffers[greet.as_uri()] = greet.read_text()  # open, nothing unsaved
        _open(one, greet, held.buffers[greet.as_uri()])
        one.client.protocol.fm.features[types.WORKSPACE_APPLY_EDIT] = held.apply_edit

        def save(params: dict[str, Any]) -> list[str]:
            for uri in params["uris"]:
                Path(to_fs_path(uri) or "").write_text(held.buffers[uri])
            return list(params["uris"])

        one.save_documents = save
        # Another editor with its own server process on the same repository, started before the
        # hand-over so that the editor's wait covers only the reads and refusals below.
        two = await _client(tmp_path, repo, "b")

        approving = asyncio.ensure_future(one.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id}))
        await asyncio.wait_for(held.asked.wait(), timeout=WAIT * 3)

        # The editor holds the edit: neither the run's lock nor the workspace's apply lock is held,
        # and the hand-over is marked (its marker lock is the only one held).
        with store.locked(run_dir, blocking=False) as run_free:
            assert run_free, "the run's lock is held while the editor decides"
        with store.locked(runs_root(repo), blocking=False, name=".apply.lock") as apply_free:
            assert apply_free, "the workspace's apply lock is held while the editor decides"
        assert store.busy(run_dir, EDITOR_MARK)
        assert json.loads((run_dir / "state.json").read_text())["editor_handoff"]["paths"] == [GREET]

        # (a) The CLI and the other server read it at once: applying (not interrupted), handed over.
        status, listed = await asyncio.gather(_cli_json(repo, "status", task_id), _cli_json(repo, "list"))
        assert status["state"] == "APPLYING" and status["interruptedIn"] is None, status
        assert [t["state"] for t in listed["tasks"] if t["id"] == task_id] == ["APPLYING"], listed
        got = await asyncio.wait_for(two.command(protocol.TASK_GET, {"taskId": task_id}), timeout=WAIT)
        assert got["state"] == "APPLYING" and got["result"] is None, got
        events = [e["event"] for e in store.read_events(run_dir / "events.jsonl")]
        assert "handed_to_editor" in events and "completed" not in events, events

        # (b) B's cancel and second approval are refused at once, saying why; resume runs nothing.
        refused = await asyncio.wait_for(
            two.command_error(protocol.TASK_CANCEL, {"taskId": task_id}), timeout=WAIT)
        assert refused.data["kind"] == "notAwaitingInput", refused.data
        assert "handed its change to the editor and waits for its answer" in refused.message, refused.message
        again = await asyncio.wait_for(
            two.command_error(protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id}), timeout=WAIT)
        assert again.data["kind"] == "alreadyDecided" and again.data["state"] == "APPLYING", again.data
        assert "its change is with the editor" in again.message, again.message
        resumed = await asyncio.wait_for(two.command(protocol.TASK_RESUME, {"taskId": task_id}), timeout=WAIT)
        assert resumed["state"] == "APPLYING", resumed
        # The waiting server itself answers its own client's cancel the same way (the person
        # pressing cancel in the editor that shows the edit), beside the approval in flight.
        own = await asyncio.wait_for(one.command_error(protocol.TASK_CANCEL, {"taskId": task_id}), timeout=WAIT)
        assert own.data["kind"] == "notAwaitingInput" and "editor" in own.message, own.data
        assert not approving.done(), "session A's approval ended before its editor answered"
        assert len(held.edits) == 1 and two.edits == []
        assert not (run_dir / "cancel.request").exists()

        # (c) The editor answers: A's approval ends with the task completed through it.
        held.release.set()
        done = await asyncio.wait_for(approving, timeout=WAIT * 3)
        seen_by_two = await wait_until_state(two, task_id, "COMPLETED")
    finally:
        held.release.set()
        if approving is not None and not approving.done():
            with contextlib.suppress(Exception):  # a failure above is the one reported
                await asyncio.wait_for(approving, timeout=WAIT)
        if two is not None:
            await close(two)
        await close(one)

    assert done["state"] == "COMPLETED", done
    assert seen_by_two["revision"] == done["revision"], (seen_by_two, done)
    apply = done["result"]["apply"]
    assert apply["via"] == "editor" and apply["writtenByEditor"] == [GREET], apply
    assert apply["written"] == [GREET, GREET_TEST] and apply["unsaved"] == [], apply
    assert done["result"]["verified"] is True
    assert "hello and goodbye" in greet.read_text() and "goodbye" in (repo / GREET_TEST).read_text()
    approvals = json.loads((run_dir / "approvals.json").read_text())["approvals"]
    assert [a["kind"] for a in approvals] == ["plan", "completion"], approvals  # B's approval was not recorded
    events = [e["event"] for e in store.read_events(run_dir / "events.jsonl")]
    assert events.index("handed_to_editor") < events.index("completed"), events
    assert "changed_while_in_editor" not in events and "cancel_requested" not in events, events
    assert "editor_handoff" not in (run_dir / "state.json").read_text()
    assert not store.busy(run_dir, EDITOR_MARK)
