"""An editor on the other side of a path map (a container, another machine, Windows): the open
document is found under the editor's own URI, so the change goes through `workspace/applyEdit`
into the buffer (unsaved edits merged) instead of being written to disk behind it; every URI the
server sends is the editor's, percent-encoded; generated documents name the editor's paths.

The editor's folder does not exist on this machine: only the server's does, as in a container.
"""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

import pytest
from lsprotocol import types
from test_server_apply_authority import wait_until_state
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support.lsp import _offset, close, connect, wait_until

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

NOTE = "# my unsaved note\n"


def _client_side(tmp_path: Path, kind: str) -> tuple[str, str, str]:
    """(the editor's folder as it writes it, the folder's URI as the editor sends it, a document
    URI maker's base): a POSIX path with a space, or a Windows path as VS Code sends it."""
    if kind == "posix":
        folder = tmp_path / "editor view" / "my project"  # never created: the editor's machine
        return str(folder), folder.as_uri(), folder.as_uri()
    return r"C:\Users\ana\my project", "file:///c%3A/Users/ana/my%20project", "file:///c%3A/Users/ana/my%20project"


def _to_real(uri: str, base: str, real: Path) -> Path:
    assert uri.startswith(base + "/"), (uri, base)
    from urllib.parse import unquote

    return real / unquote(uri[len(base) + 1:])


@pytest.mark.parametrize("kind", ["posix", "windows"])
async def test_a_path_mapped_edit_goes_into_the_open_buffer(tmp_path: Path, kind: str) -> None:
    real = build_repo(tmp_path / "server-side" / "project")
    shown, folder_uri, base = _client_side(tmp_path, kind)
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=_caps(),
            client_info=types.ClientInfo(name="Mapped", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=folder_uri, name="my project")],
            initialization_options={"autocode": {"pathMap": {shown: str(real)}}},
        ))
        ws = shown
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND, "workspace": ws})
        assert snap["workspace"] == shown and str(real) not in str(snap)
        snap = await session.command(protocol.TASK_ANSWER, {
            "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER, "workspace": ws,
        })
        snap = await session.command(protocol.TASK_APPROVE_PLAN, {
            "taskId": snap["id"], "revision": snap["needs"]["planRevision"], "workspace": ws,
        })
        assert snap["needs"]["kind"] == "approve_completion", snap

        # The person has greet.py open (under the editor's URI) with an edit they did not save.
        greet_uri = f"{base}/greet.py"
        on_disk = (real / "greet.py").read_bytes()
        buffer = {"text": NOTE + (real / "greet.py").read_text(encoding="utf-8")}
        session.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=greet_uri, language_id="python", version=3, text=buffer["text"])
        ))

        def editor(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            for step in params.edit.document_changes or []:
                assert isinstance(step, types.TextDocumentEdit), step
                uri = step.text_document.uri
                if uri == greet_uri:
                    assert step.text_document.version == 3
                    for e in step.edits:
                        start, end = _offset(buffer["text"], e.range.start), _offset(buffer["text"], e.range.end)
                        buffer["text"] = buffer["text"][:start] + e.new_text + buffer["text"][end:]
                else:  # a file the editor has not open: it changes the file (on its side of the mount)
                    path = _to_real(uri, base, real)
                    text = path.read_text(encoding="utf-8")
                    for e in step.edits:
                        start, end = _offset(text, e.range.start), _offset(text, e.range.end)
                        text = text[:start] + e.new_text + text[end:]
                    path.write_text(text, encoding="utf-8")
            return types.ApplyWorkspaceEditResult(applied=True)

        session.apply_edit = editor
        waiting = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"], "workspace": ws})
        # The buffer held unsaved edits: the change is merged into it and the task waits for the save.
        assert waiting["state"] == "WAITING_FOR_SAVE" and waiting["needs"]["paths"] == ["greet.py"], waiting
        [edit] = session.edits
        uris = [step.text_document.uri for step in edit.edit.document_changes or []]  # type: ignore[union-attr]
        assert uris == [greet_uri]  # the editor's name for it, percent-encoded
        # The buffer holds both the note and the change; the file on disk was not written behind it.
        assert buffer["text"].startswith(NOTE) and "hello and goodbye" in buffer["text"]
        assert (real / "greet.py").read_bytes() == on_disk
        # The person saves under the editor's URI: the mapped save completes the task.
        (real / "greet.py").write_text(buffer["text"], encoding="utf-8")
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=greet_uri)))
        done = await wait_until_state(session, snap["id"], "COMPLETED")
        apply = done["result"]["apply"]
        assert apply["via"] == "editor" and apply["writtenByEditor"] == ["greet.py"], apply
    finally:
        await close(session)


@pytest.mark.parametrize("kind", ["posix", "windows"])
async def test_generated_documents_and_uris_name_the_editors_paths(tmp_path: Path, kind: str) -> None:
    real = build_repo(tmp_path / "server-side" / "project")
    shown, folder_uri, base = _client_side(tmp_path, kind)
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=_caps(),
            client_info=types.ClientInfo(name="Mapped", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=folder_uri, name="my project")],
            initialization_options={"autocode": {"pathMap": [f"{shown}={real}"]}},
        ))
        opened = await session.command(protocol.DOCTOR_OPEN, {"workspace": shown})
        doctor = real / ".autocode" / "runs" / "doctor.md"
        text = doctor.read_text(encoding="utf-8")
        assert str(real) not in text, text
        client_path = str(PureWindowsPath(shown)) if kind == "windows" else shown
        assert client_path in text
        assert opened["uri"] == f"{base}/.autocode/runs/doctor.md" and opened["shown"] is True
        assert [d.uri for d in session.client.shown_documents] == [opened["uri"]]
    finally:
        await close(session)


def _caps() -> types.ClientCapabilities:
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
        ),
        window=types.WindowClientCapabilities(show_document=types.ShowDocumentClientCapabilities(support=True)),
    )



async def test_a_path_map_that_cannot_be_used_is_said_and_nothing_is_mapped(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=_caps(),
            client_info=types.ClientInfo(name="Mapped", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
            initialization_options={"autocode": {"pathMap": [r"Users\ana\app=/work/app"]}},
        ))
        await wait_until(lambda: any("path map" in m.message for m in session.client.messages), what="the refusal")
        [said] = [m.message for m in session.client.messages if "path map" in m.message]
        assert "is not an absolute path" in said and "C:\\" in said and "file://" in said, said
        info = await session.command(protocol.PROTOCOL_INFO)
        assert info["workspaces"] == [str(repo)]  # the session goes on with the editor's own names
    finally:
        await close(session)
