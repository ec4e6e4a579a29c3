"""A session without a workspace folder: no repository in context."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support.lsp import Session, close, connect, initialize


@pytest_asyncio.fixture(scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    log_file = tmp_path_factory.mktemp("logs") / "lsp.log"
    s = await connect("stdio", log_file=log_file)
    await initialize(s, preset="vscode", folders=None)
    yield s
    await close(s)


TASK_CALLS = [
    (protocol.TASK_START, {"brief": "do it"}),
    (protocol.TASK_LIST, {}),
    (protocol.TASK_GET, {"taskId": "t-1"}),
    (protocol.TASK_ANSWER, {"taskId": "t-1", "questionId": "q", "text": "x"}),
    (protocol.TASK_APPROVE_PLAN, {"taskId": "t-1", "revision": 1}),
    (protocol.TASK_REJECT_PLAN, {"taskId": "t-1", "feedback": "no"}),
    (protocol.TASK_APPROVE_COMPLETION, {"taskId": "t-1"}),
    (protocol.TASK_CANCEL, {"taskId": "t-1"}),
    (protocol.PREP_RUN, {}),
    (protocol.PROJECT_FORGET, {"confirm": True}),
]


@pytest.mark.parametrize(("name", "args"), TASK_CALLS, ids=[c[0] for c in TASK_CALLS])
async def test_repository_commands_say_they_need_a_folder(session: Session, name: str, args: dict[str, object]) -> None:
    err = await session.command_error(name, args)
    assert err.code == -32803
    assert err.data["kind"] == "noRepository"
    assert "open a folder" in err.message


async def test_info_reports_no_workspace(session: Session) -> None:
    info = await session.command(protocol.PROTOCOL_INFO)
    assert info["workspaces"] == []


async def test_a_workspace_argument_that_is_not_a_folder_is_a_bad_argument(session: Session, tmp_path: Path) -> None:
    for bad in ("relative/path", str(tmp_path / "missing"), "http://example.invalid/x"):
        err = await session.command_error(protocol.TASK_LIST, {"workspace": bad})
        assert err.code == -32602, bad
