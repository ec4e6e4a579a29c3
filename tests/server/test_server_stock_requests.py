"""What a stock client gets for every request, however it is written: a JSON-RPC error for
`workspace/executeCommand` params LSP would not send (never silence), and a name in the ledger
for a client that sends no `clientInfo` (eglot 1.9), taken from its connection, never "unknown".
The real server process, a raw JSON-RPC client (as any editor's library would be) or the pygls client.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support.lsp import close, connect
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
