"""What a stock client gets for every request, however it is written: a JSON-RPC error for
`workspace/executeCommand` params LSP would not send (never silence), and a name in the ledger
for a client that sends no `clientInfo` (eglot 1.9), taken from its connection, never "unknown".
The real server process, a raw JSON-RPC client (as any editor's library would be) or the pygls client.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp.client import make_test_lsp_client
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support.lsp import Session, close, connect, logged, server_command, wait_until
from support.remote import StdioClient, frame, initialize_frame

pytestmark = pytest.mark.timeout(180)  # a request without a reply would block the raw client

MALFORMED = {
    "arguments a string": {"command": protocol.TASK_START, "arguments": "start a task"},
    "arguments an object": {"command": protocol.TASK_START, "arguments": {"brief": BRIEF}},
    "arguments a number": {"command": protocol.TASK_START, "arguments": 5},
    "command a number": {"command": 5, "arguments": []},
    "no params": None,
    "an argument of the wrong type": {"command": protocol.TASK_START, "arguments": [{"brief": 7}]},
    "a huge argument list": {"command": protocol.TASK_START, "arguments": [{"brief": BRIEF}] * 20000},
    "a huge string": {"command": protocol.TASK_START, "arguments": [{"brief": "x" * 2_000_000}]},
}


def test_malformed_execute_command_params_each_get_an_error_and_nothing_runs(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    process = subprocess.Popen(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "lsp.log")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    client = StdioClient(process)
    try:
        assert "result" in client.request(initialize_frame(1, None, repo), 1)
        client.send(frame({"method": "initialized", "params": {}}))
        for number, (what, params) in enumerate(MALFORMED.items(), start=10):
            message = {"id": number, "method": "workspace/executeCommand"}
            if params is not None:
                message["params"] = params
            reply = client.request(frame(message), number)
            assert "error" in reply, (what, reply)
            error = reply["error"]
            assert error["code"] == -32602, (what, error)
            assert error["message"], what
            if what.startswith("arguments a"):
                kind = what.removeprefix("arguments a").removeprefix("n").strip()
                assert f"`arguments` is a JSON {kind}, not a list" in error["message"], error
                assert "a list holding one JSON object" in error["message"]
        # The session goes on, and nothing of a task was started or written.
        info = client.request(frame({"id": 99, "method": "workspace/executeCommand",
                                     "params": {"command": protocol.PROTOCOL_INFO, "arguments": []}}), 99)
        assert info["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION
        assert not (repo / ".autocode" / "runs").exists()
    finally:
        process.kill()
        process.wait()


async def test_a_client_without_client_info_is_named_by_its_connection(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
        ))
        session.choose = lambda params: None
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await session.command(protocol.TASK_ANSWER, {
            "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER,
        })
        await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        await close(session)
    ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
    [answer] = ledger["answers"]
    # The test process (python) started the server over stdio, as an editor would.
    assert answer["source"]["actor"].endswith(" over stdio"), answer["source"]
    assert answer["source"]["channel"] == "lsp:" + answer["source"]["actor"]
    assert "unknown" not in json.dumps(answer["source"])


def _plain_caps(*, push: bool = False, pull: bool = False, lens_refresh: bool = False) -> types.ClientCapabilities:
    text = types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities() if push else None,
        diagnostic=types.DiagnosticClientCapabilities() if pull else None,
    )
    workspace = types.WorkspaceClientCapabilities(
        code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True) if lens_refresh else None,
    )
    return types.ClientCapabilities(text_document=text, workspace=workspace)


async def _plain(tmp_path: Path, name: str, repo: Path, caps: types.ClientCapabilities | None = None,
                 env: dict[str, str] | None = None) -> Any:
    session = await connect("stdio", log_file=tmp_path / f"{name}.log", env=env)
    await session.client.initialize_session(types.InitializeParams(
        capabilities=caps or types.ClientCapabilities(),
        client_info=types.ClientInfo(name=name, version="test"),
        workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
    ))
    return session


async def _code_actions(session: Any, uri: str, diagnostics: list[types.Diagnostic] | None = None) -> list[Any]:
    """The code actions as the editor reads them: plain JSON (lsprotocol's client-side converter
    reads a CodeAction that carries a command as a Command, see test_server_actions)."""
    raw: list[Any] = []
    structure = session.client.protocol.structure_message

    def spy(data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and isinstance(data.get("result"), list):
            raw.append(json.loads(json.dumps(data["result"])))
        return structure(data)

    session.client.protocol.structure_message = spy
    try:
        await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=diagnostics or []),
        ))
    finally:
        session.client.protocol.structure_message = structure
    return list(raw[-1]) if raw else []


async def test_a_prompt_answered_with_an_error_or_not_at_all_is_asked_again(tmp_path: Path) -> None:
    """eglot answers showMessageRequest with an error when the person presses C-g; a client may
    never answer. Neither is an answer; the next code action request or command asks again."""
    repo = build_repo(tmp_path / "project")
    env = {**os.environ, "AUTOCODE_LSP_PROMPT_TIMEOUT_S": "1"}
    client = make_test_lsp_client()
    replies: list[str] = ["error", "never", "Let AutoCode decide"]
    asked: list[str] = []
    never = asyncio.Event()

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def person(ls: Any, params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        asked.append(params.message)
        reply = replies.pop(0)
        if reply == "error":
            raise RuntimeError("Quit")
        if reply == "never":
            await never.wait()
        return types.MessageActionItem(title=reply)

    await client.start_io(*server_command(tmp_path / "lsp.log"), env=env)
    session = Session(client=client, process=None, transport="stdio")
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            client_info=types.ClientInfo(name="Plain", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
        ))
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(lambda: logged(session, "got the editor answered with an error"), what="the error reply")
        assert (await session.command(protocol.TASK_GET, {"taskId": snap["id"]}))["needs"]["kind"] == "answer_questions"
        # The person's next interaction (a menu) asks again; this time the editor never answers.
        await _code_actions(session, (repo / "greet.py").as_uri())
        await wait_until(lambda: logged(session, "got no reply in 1 s"), what="the prompt given up")
        assert len(asked) == 2
        # A command is an interaction too: asked a third time, and this answer is taken.
        await session.command(protocol.TASK_LIST, {})
        done = None

        async def planned() -> bool:
            nonlocal done
            done = await session.command(protocol.TASK_GET, {"taskId": snap["id"]})
            return bool(done["needs"]["kind"] == "approve_plan")

        for _ in range(600):
            if await planned():
                break
            await asyncio.sleep(0.05)
        assert done is not None and done["needs"]["kind"] == "approve_plan", done
        assert len(asked) == 3
        ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
        assert [a["kind"] for a in ledger["answers"]] == ["delegated"]
        await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        never.set()
        await close(session)


async def test_an_opted_in_question_that_got_an_error_is_asked_again(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    answers: list[Any] = ["error", NAMING_ANSWER]

    def answer(question: dict[str, Any]) -> Any:
        reply = answers.pop(0)
        if reply == "error":
            raise RuntimeError("the editor's picker failed")
        return reply

    session.answer_question = answer
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(experimental={"autocode": {"protocolVersion": "1.0"}}),
            client_info=types.ClientInfo(name="OptedIn", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
        ))
        session.review_plan = lambda plan: {"decision": "later"}
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(lambda: logged(session, "autocode/task/askQuestion got the editor answered with an error"),
                         what="the error reply")
        await session.command(protocol.TASK_LIST, {})
        await wait_until(lambda: len(session.questions) == 2, what="the question asked again")
        await wait_until(lambda: bool(session.reviews), what="the plan that follows the answer")
        ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
        assert [(a["kind"], a["text"]) for a in ledger["answers"]] == [("human", NAMING_ANSWER)]
        await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        await close(session)


async def test_another_session_is_told_of_a_task_it_did_not_start(tmp_path: Path) -> None:
    """Two editors on one repository, each with its own server process over stdio."""
    repo = build_repo(tmp_path / "project")
    first = await _plain(tmp_path, "First", repo)
    second = await _plain(tmp_path, "Second", repo)
    try:
        first.choose = lambda params: None
        second.choose = lambda params: None
        snap = await first.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(
            lambda: any(f"started task {snap['id']}" in m.message for m in second.client.messages),
            what="the second editor told",
        )
        [told] = [m.message for m in second.client.messages if f"started task {snap['id']}" in m.message]
        assert "another editor session" in told and "code actions" in told and "waiting for answer questions" in told
        assert not any("started task" in m.message for m in first.client.messages)  # its own task is no news
        await first.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        await close(second)
        await close(first)


async def test_a_waiting_plan_is_a_diagnostic_with_its_decisions_as_quick_fixes(tmp_path: Path) -> None:
    """A stock client that draws diagnostics: the plan waiting for approval is marked where the
    person reads it, the decisions are the quick fixes of that mark, messages name the code action,
    and lenses are refreshed when they change."""
    repo = build_repo(tmp_path / "project")
    session = await _plain(tmp_path, "Pusher", repo, _plain_caps(push=True, lens_refresh=True))
    refreshes: list[int] = []

    @session.client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(ls: Any, params: Any) -> None:
        refreshes.append(1)

    try:
        session.choose = lambda params: "Let AutoCode decide"
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        plan_uri = (Path(snap["runDir"]) / "plan.md").as_uri()
        await wait_until(lambda: bool(session.client.diagnostics.get(plan_uri)), what="the plan's diagnostic")
        [diag] = session.client.diagnostics[plan_uri]
        assert "waiting for your approval" in diag.message and diag.source == "AutoCode"
        assert refreshes, "the lenses changed with the task: the client is asked to refresh them"
        await wait_until(lambda: any("is ready for review" in m.message for m in session.client.messages),
                         what="the plan announced")
        message = next(m.message for m in session.client.messages if "is ready for review" in m.message)
        assert "run the code action 'AutoCode: approve plan r1 of" in message
        assert protocol.TASK_APPROVE_PLAN not in message and "taskId" not in message

        found = await _code_actions(session, plan_uri, [diag])
        fixes = [a for a in found if a.get("kind") == "quickfix"]
        assert [f["title"] for f in fixes] == [
            f"AutoCode: approve plan r1 of '{BRIEF}'", f"AutoCode: request changes to plan r1 of '{BRIEF}'…",
        ]
        wire = session.client.protocol._converter.unstructure(diag)
        assert all(f["diagnostics"] == [wire] and not f.get("isPreferred") for f in fixes)
        titles = [a["title"] for a in found]
        assert titles.count(f"AutoCode: approve plan r1 of '{BRIEF}'") == 1  # not offered twice
        approve = fixes[0]["command"]
        await session.command(approve["command"], *(approve.get("arguments") or []))
        diff_uri = (Path(snap["runDir"]) / "changes.diff").as_uri()
        await wait_until(lambda: bool(session.client.diagnostics.get(diff_uri)), timeout=60, what="the change's diagnostic")
        assert list(session.client.diagnostics[plan_uri]) == []  # the plan no longer waits
        assert "waiting for your approval" in session.client.diagnostics[diff_uri][0].message
        await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
        await wait_until(lambda: not list(session.client.diagnostics[diff_uri]), what="the mark cleared")
    finally:
        await close(session)


async def test_a_pulling_client_gets_the_waiting_plan_from_document_and_workspace_diagnostics(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await _plain(tmp_path, "Puller", repo, _plain_caps(pull=True))
    try:
        session.choose = lambda params: "Let AutoCode decide"
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        for _ in range(600):
            snap = await session.command(protocol.TASK_GET, {"taskId": snap["id"]})
            if snap["needs"]["kind"] == "approve_plan":
                break
            await asyncio.sleep(0.05)
        plan_uri = (Path(snap["runDir"]) / "plan.md").as_uri()
        assert session.client.diagnostics == {}  # a pulling client is not pushed to
        report = await session.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=plan_uri),
        ))
        assert ["waiting for your approval" in d.message for d in report.items] == [True]
        other = await session.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=(repo / "greet.py").as_uri()),
        ))
        assert list(other.items) == []
        everything = await session.client.workspace_diagnostic_async(
            types.WorkspaceDiagnosticParams(previous_result_ids=[])
        )
        assert [item.uri for item in everything.items] == [plan_uri]
        await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        await close(session)
