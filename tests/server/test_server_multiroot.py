"""Several workspace folders: commands that name a task find it; others need `workspace`.

The client here opts in to `didChange` only (askQuestion and reviewPlan declined), so
questions reach it as plain messages while snapshots arrive as notifications."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo
from support.lsp import Session, close, connect, initialize, wait_until


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("multi")
    return [make_repo(base / name, {"README.md": f"{name}\n"}) for name in ("one", "two")]


@pytest_asyncio.fixture(scope="module")
async def session(repos: list[Path], tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    await initialize(
        s, preset="vscode", folders=repos, opt_in={"askQuestion": False, "reviewPlan": False}
    )
    yield s
    await close(s)


async def test_info_lists_every_folder(session: Session, repos: list[Path]) -> None:
    info = await session.command(protocol.PROTOCOL_INFO)
    assert info["workspaces"] == [str(r) for r in repos]
    assert info["clientOptedIn"] is True


async def test_ambiguous_commands_ask_for_a_workspace(session: Session, repos: list[Path]) -> None:
    for name, args in ((protocol.DOCTOR, {}), (protocol.PROJECT_FORGET, {"confirm": True}),
                       (protocol.MEMORY_LIST, {})):
        err = await session.command_error(name, args)
        assert err.code == -32602, name
        assert "pass `workspace`" in err.message
    report = await session.command(protocol.DOCTOR, {"workspace": repos[1].as_uri()})
    assert report["report"]["workspace"] == str(repos[1])


async def test_task_list_covers_every_folder_and_get_searches_them(session: Session) -> None:
    listed = await session.command(protocol.TASK_LIST)
    assert listed == {"tasks": []}
    err = await session.command_error(protocol.TASK_GET, {"taskId": "t-20000101-000000-abcdef"})
    assert err.data["kind"] == "taskNotFound"
    assert "autocode.task.list" in err.message


async def test_a_task_in_the_second_folder_is_found_without_naming_it(
    session: Session, repos: list[Path]
) -> None:
    err = await session.command_error(protocol.TASK_START, {"brief": "Add a CONTRIBUTING file"})
    assert err.code == -32602 and "pass `workspace`" in err.message
    started = await session.command(
        protocol.TASK_START,
        {"brief": "Add a CONTRIBUTING file", "workspace": repos[1].as_uri(), "testCommand": "true"},
    )
    assert started["workspace"] == str(repos[1])
    assert not (repos[0] / ".autocode" / "runs").exists()
    task_id = started["id"]
    # Declined askQuestion: the question came as showMessageRequest; didChange still arrives.
    await wait_until(lambda: session.message_requests, what="the question as a message request")
    assert session.questions == []
    await wait_until(
        lambda: bool(session.did_change) and session.did_change[-1]["revision"] == started["revision"],
        what="didChange",
    )
    got = await session.command(protocol.TASK_GET, {"taskId": task_id})
    assert got["id"] == task_id and got["workspace"] == str(repos[1])
    listed = await session.command(protocol.TASK_LIST)
    assert [(t["id"], t["workspace"]) for t in listed["tasks"]] == [(task_id, str(repos[1]))]
    cancelled = await session.command(protocol.TASK_CANCEL, {"taskId": task_id})
    assert cancelled["state"] == "CANCELLED"
