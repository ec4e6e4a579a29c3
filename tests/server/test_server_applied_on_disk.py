"""Applied means on disk (the real server process, real git repositories): a buffer that held no
unsaved edits is saved after `workspace/applyEdit` (by the editor when it answers
`autocode/task/saveDocuments`; never written by the server behind the buffer, so without that the
task waits for the person's save), a buffer with unsaved edits keeps them merged and waits too, and
COMPLETED is said only once every file was read back from disk with the change in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import to_fs_path
from test_server_apply_authority import (
    GREET,
    GREET_TEST,
    NOTE,
    _client,
    _offset,
    _open,
    _verified,
    wait_until_state,
)

from autocode_lsp import protocol
from support.lsp import Session, close, wait_until

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")


def _buffers(session: Session, texts: dict[str, str]) -> None:
    """An editor that applies edits to its open buffers only (never to disk); others to disk."""

    def editor(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        for step in params.edit.document_changes or []:
            assert isinstance(step, types.TextDocumentEdit)
            uri = step.text_document.uri
            path = Path(to_fs_path(uri) or "")
            text = texts.get(uri, path.read_text() if path.exists() else "")
            for e in step.edits:
                text = text[:_offset(text, e.range.start)] + e.new_text + text[_offset(text, e.range.end):]
            if uri in texts:
                texts[uri] = text
            else:
                path.write_text(text)
        return types.ApplyWorkspaceEditResult(applied=True)

    session.apply_edit = editor


async def test_an_opted_in_editor_saves_the_clean_buffers_and_the_task_completes(tmp_path: Path) -> None:
    repo = Path(tmp_path / "project")
    from test_server_tasks_flow import build_repo

    build_repo(repo)
    session = await _client(tmp_path, repo, "lsp", opt_in=True)
    try:
        snap = await _verified(session, repo)
        greet = repo / GREET
        texts = {greet.as_uri(): greet.read_text()}  # open, nothing unsaved
        _open(session, greet, texts[greet.as_uri()])
        _buffers(session, texts)

        def save(params: dict[str, Any]) -> list[str]:
            for uri in params["uris"]:
                Path(to_fs_path(uri) or "").write_text(texts[uri])
            return list(params["uris"])

        session.save_documents = save
        done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert done["state"] == "COMPLETED", done
        assert [s["uris"] for s in session.saves] == [[greet.as_uri()]] and session.saves[0]["taskId"] == snap["id"]
        assert "hello and goodbye" in greet.read_text()  # read from disk
        assert done["result"]["apply"]["writtenByEditor"] == [GREET] and done["result"]["apply"]["unsaved"] == []
    finally:
        await close(session)


async def test_a_clean_buffer_the_editor_does_not_save_waits_for_the_persons_save(tmp_path: Path) -> None:
    """Nothing is written behind an open buffer: the editor would hold a modified buffer over a
    file changed on disk and ask the person whether to overwrite it at the next save."""
    from test_server_tasks_flow import build_repo

    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp")  # a plain client: no saveDocuments
    try:
        snap = await _verified(session, repo)
        greet = repo / GREET
        before = greet.read_bytes()
        texts = {greet.as_uri(): greet.read_text()}
        _open(session, greet, texts[greet.as_uri()])
        _buffers(session, texts)
        waiting = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert waiting["state"] == "WAITING_FOR_SAVE" and waiting["needs"]["paths"] == [GREET], waiting
        assert greet.read_bytes() == before and "hello and goodbye" in texts[greet.as_uri()]
        assert "goodbye" in (repo / GREET_TEST).read_text()  # not open: written to disk
        # The person saves the buffer: the change is on disk, the task completes.
        greet.write_text(texts[greet.as_uri()])
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        done = await wait_until_state(session, snap["id"], "COMPLETED")
        assert greet.read_text() == texts[greet.as_uri()] and "hello and goodbye" in greet.read_text()
        assert done["result"]["apply"]["message"].endswith("saved by you, on disk"), done
    finally:
        await close(session)


async def test_a_buffer_discarded_after_the_apply_never_completes(tmp_path: Path) -> None:
    from test_server_tasks_flow import build_repo

    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp", opt_in=True)
    try:
        snap = await _verified(session, repo)
        greet = repo / GREET
        on_disk = greet.read_text()
        texts = {greet.as_uri(): NOTE + on_disk}  # unsaved edits
        _open(session, greet, texts[greet.as_uri()])
        _buffers(session, texts)
        waiting = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
        assert waiting["state"] == "WAITING_FOR_SAVE" and waiting["needs"]["paths"] == [GREET]
        assert session.saves == []  # a buffer with the person's unsaved edits is never saved for them
        # The person throws the buffer away and saves the old text: the change is not on disk.
        greet.write_text(on_disk)
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        again = await session.command(protocol.TASK_GET, {"taskId": snap["id"]})
        assert again["state"] == "WAITING_FOR_SAVE" and again["result"] is None
        # Saved with the change (and their note): completed.
        greet.write_text(texts[greet.as_uri()])
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        done = await wait_until_state(session, snap["id"], "COMPLETED")
        assert greet.read_text().startswith(NOTE) and "hello and goodbye" in greet.read_text()
        assert done["result"]["apply"]["message"].endswith("saved by you, on disk")
    finally:
        await close(session)


MINE = "def greet():\n    return 'hello, mine'\n"
"""The person's unsaved edit of greet.py: the same line the task changes."""


async def _markers_in_unsaved_buffer(
    tmp_path: Path, *, opt_in: bool = True, saved: bool = False,
) -> tuple[Session, Path, dict[str, str], str, dict[str, Any]]:
    """A conflict with the person's unsaved edits in an open buffer (`saved`: edits they saved,
    the buffer clean), resolved with conflict markers: (session, greet.py, the buffers,
    greet.py's text on disk, the resolve's answer)."""
    from test_server_tasks_flow import build_repo

    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp", opt_in=opt_in)
    snap = await _verified(session, repo)
    greet = repo / GREET
    if saved:
        greet.write_text(MINE)
    on_disk = greet.read_text()
    texts = {greet.as_uri(): MINE}  # unless saved, the disk still holds the text from before
    _open(session, greet, MINE)
    _buffers(session, texts)
    waiting = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"]})
    assert waiting["state"] == "WAITING_FOR_CONFLICT_RESOLUTION" and greet.read_text() == on_disk, waiting
    resolved = await session.command(
        protocol.TASK_RESOLVE_CONFLICTS, {"taskId": snap["id"], "choices": {GREET: "markers"}})
    return session, greet, texts, on_disk, resolved


async def test_markers_in_a_buffer_with_unsaved_edits_wait_for_the_save(tmp_path: Path) -> None:
    """The markers went into the buffer, not to disk: the task is not COMPLETED, and it says
    which file to save and that the markers in it are the person's to resolve."""
    session, greet, texts, on_disk, resolved = await _markers_in_unsaved_buffer(tmp_path)
    try:
        buffer = texts[greet.as_uri()]
        assert "<<<<<<< mine" in buffer and "hello, mine" in buffer and "hello and goodbye" in buffer
        assert greet.read_text() == on_disk and session.saves == []  # nothing of it on disk
        assert resolved["state"] == "WAITING_FOR_SAVE" and resolved["result"] is None, resolved
        needs = resolved["needs"]
        assert needs["kind"] == "save_files" and needs["paths"] == [GREET], needs
        assert needs["apply"]["unsaved"] == [GREET] and needs["apply"]["choices"] == {GREET: "markers"}
        assert f"{GREET} holds conflict markers in the editor" in needs["apply"]["message"], needs
        assert "save" in needs["apply"]["message"]
        # Saving the old text (the buffer thrown away) does not put the result on disk.
        greet.write_text(on_disk)
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        again = await session.command(protocol.TASK_GET, {"taskId": resolved["id"]})
        assert again["state"] == "WAITING_FOR_SAVE" and again["needs"]["paths"] == [GREET]
    finally:
        await close(session)


async def test_markers_in_a_buffer_complete_once_it_is_saved(tmp_path: Path) -> None:
    """A plain client (no task notifications) is told in words which file to save and that it
    holds markers."""
    session, greet, texts, _on_disk, resolved = await _markers_in_unsaved_buffer(tmp_path, opt_in=False)
    try:
        assert resolved["state"] == "WAITING_FOR_SAVE", resolved
        await wait_until(
            lambda: any(f"save {GREET} to complete it" in m.message and f"{GREET} holds conflict markers" in m.message
                        for m in session.client.messages),
            what="the plain client to hear which file to save",
        )
        # The person saves the buffer, markers and all: what the apply left is on disk.
        greet.write_text(texts[greet.as_uri()])
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        done = await wait_until_state(session, resolved["id"], "COMPLETED")
        assert "<<<<<<< mine" in greet.read_text()
        assert done["result"]["apply"]["unsaved"] == [] and done["result"]["apply"]["choices"] == {GREET: "markers"}
        assert done["result"]["apply"]["message"].endswith("saved by you, on disk"), done
    finally:
        await close(session)


async def test_markers_resolved_in_the_buffer_before_the_save_complete_too(tmp_path: Path) -> None:
    """Resolving the markers in the editor and then saving is the usual way: the saved text is
    the person's, the task completes."""
    session, greet, texts, _on_disk, resolved = await _markers_in_unsaved_buffer(tmp_path)
    try:
        assert resolved["state"] == "WAITING_FOR_SAVE", resolved
        mine_and_theirs = "def greet():\n    return 'hello, mine, and goodbye'\n"
        texts[greet.as_uri()] = mine_and_theirs  # the markers resolved in the buffer, then saved
        greet.write_text(texts[greet.as_uri()])
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        done = await wait_until_state(session, resolved["id"], "COMPLETED")
        assert greet.read_text() == mine_and_theirs and done["result"]["apply"]["unsaved"] == []
    finally:
        await close(session)


async def test_markers_in_a_clean_buffer_the_editor_does_not_save_wait_for_the_save(tmp_path: Path) -> None:
    """Never written behind the open buffer, and never COMPLETED before the disk has them."""
    session, greet, texts, on_disk, resolved = await _markers_in_unsaved_buffer(tmp_path, opt_in=False, saved=True)
    try:
        assert "<<<<<<< mine" in texts[greet.as_uri()] and greet.read_text() == on_disk == MINE
        assert resolved["state"] == "WAITING_FOR_SAVE" and resolved["needs"]["paths"] == [GREET], resolved
        greet.write_text(texts[greet.as_uri()])
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet.as_uri())))
        await wait_until_state(session, resolved["id"], "COMPLETED")
    finally:
        await close(session)
