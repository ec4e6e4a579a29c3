"""Every argument has a bound, and confinement comes before anything reads a task (issue 31).

The real server over stdio: oversized briefs, answers, ids and paths fail with -32602 naming
the field and its size, never echoing the value, and nothing is written; a task command
without `taskId` naming another repository as `workspace` learns nothing of that repository's
tasks; a `manifest` outside the workspace is refused the same way whether it exists or not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from test_server_tasks_flow import TEST_COMMAND, build_repo

from autocode_lsp import protocol
from autocode_lsp.protocol import limits
from support.lsp import Session, close, connect, initialize

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

OTHER_BRIEF = "The other repository's private brief: rotate the staging keys"


@pytest_asyncio.fixture(scope="module")
async def repos(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Session, Path, Path, str]]:
    """A session on `mine`, and a task waiting in `other` (started by a session of its own)."""
    root = tmp_path_factory.mktemp("bounds")
    mine, other = build_repo(root / "mine"), build_repo(root / "other")
    for repo in (mine, other):
        (repo / ".autocode").mkdir(exist_ok=True)
        (repo / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')
    theirs = await connect("stdio", log_file=root / "other.log")
    await initialize(theirs, preset="neovim", folders=[other])
    theirs.choose = lambda params: None
    started = await theirs.command(protocol.TASK_START, {"brief": OTHER_BRIEF})
    await close(theirs)
    session = await connect("stdio", log_file=root / "mine.log")
    await initialize(session, preset="neovim", folders=[mine])
    session.choose = lambda params: None
    yield session, mine, other, str(started["id"])
    await close(session)


@pytest.mark.parametrize("command", [
    protocol.TASK_APPROVE_PLAN, protocol.TASK_GET, protocol.TASK_CANCEL, protocol.TASK_ASK,
])
async def test_a_task_command_without_task_id_learns_nothing_of_another_repository(
    command: str, repos: tuple[Session, Path, Path, str]
) -> None:
    session, _mine, other, other_id = repos
    for workspace in (str(other), other.as_uri()):
        err = await session.command_error(command, {"workspace": workspace})
        assert err.code == protocol.INVALID_PARAMS, err
        assert err.data["kind"] == "workspaceOutsideSession", err.data
        told = f"{err.message} {err.data}"
        assert other_id not in told and "staging keys" not in told
    assert (other / ".autocode" / "runs" / other_id).is_dir()


OVERSIZED = {
    protocol.TASK_START: {"brief": "b" * (limits.FIELDS["brief"].chars + 1)},
    protocol.TASK_ANSWER: {"taskId": "t-1", "questionId": "q1", "text": "a" * (limits.FIELDS["text"].chars + 1)},
    protocol.TASK_GET: {"taskId": "t" * 129},
    protocol.TASK_LIST: {"workspace": "/" + "p" * limits.PATH.chars},
    protocol.TASK_REJECT_PLAN: {"taskId": "t-1", "feedback": "f" * 16_001},
    protocol.MEMORY_SEARCH: {"query": "q" * 2_001},
    protocol.MEMORY_SAVE: {"content": "c" * 8_001},
    protocol.MEMORY_APPLY_PROMOTION: {"ids": ["m"] * 1_001},
    protocol.TASK_RESOLVE_CONFLICTS: {"taskId": "t-1", "choices": {"x" * 5000: "mine"}},
    protocol.PREP_RUN: {"manifest": "m" * 5000},
    protocol.DOCTOR: {"w" * 100: 1},
}


@pytest.mark.parametrize("command", sorted(OVERSIZED))
async def test_an_oversized_argument_is_refused_by_name_and_size_without_echo(
    command: str, repos: tuple[Session, Path, Path, str]
) -> None:
    session, mine, _other, _ = repos
    before = sorted(p.name for p in (mine / ".autocode").rglob("*"))
    err = await session.command_error(command, OVERSIZED[command])
    assert err.code == protocol.INVALID_PARAMS, (command, err)
    assert "over the limit" in err.message, err.message
    assert len(err.message) < 400 and len(str(err.data)) < 1000, "the refusal echoes the value"
    assert sorted(p.name for p in (mine / ".autocode").rglob("*")) == before, "something was written"


async def test_a_brief_at_its_bound_is_accepted_and_one_over_is_not(repos: tuple[Session, Path, Path, str]) -> None:
    session, mine, _other, _ = repos
    bound = limits.FIELDS["brief"].chars
    err = await session.command_error(protocol.TASK_START, {"brief": "x" * (bound + 1)})
    assert f"`brief` is {bound + 1:,} characters, over the limit of {bound:,}" in err.message
    started = await session.command(protocol.TASK_START, {"brief": "Say hello. " + "x" * (bound - 11)})
    assert started["id"]
    await session.command(protocol.TASK_CANCEL, {"taskId": started["id"], "workspace": str(mine)})


async def test_a_manifest_outside_the_workspace_is_refused_alike_whether_it_exists_or_not(
    repos: tuple[Session, Path, Path, str], tmp_path: Path
) -> None:
    session, mine, other, _ = repos
    real = tmp_path / "secret" / "inputs.json"
    real.parent.mkdir()
    real.write_text('{"inputs": []}\n', encoding="utf-8")
    link = mine / "escape.json"
    link.symlink_to(real)
    prep = mine / ".autocode" / "prep"
    copies_before = sorted(prep.iterdir()) if prep.exists() else []
    try:
        answers = []
        for manifest in (str(real), str(tmp_path / "secret" / "missing.json"), "../other/none.json",
                         str(other / "greet.py"), "escape.json", real.as_uri()):
            for command, extra in ((protocol.PREP_RUN, {}), (protocol.TASK_START, {"brief": "anything"})):
                err = await session.command_error(command, {**extra, "manifest": manifest, "workspace": str(mine)})
                assert err.code == protocol.INVALID_PARAMS and err.data["kind"] == "manifestOutsideWorkspace", err
                answers.append((command, err.message))
        # The same answer for a file that exists and one that does not: nothing to learn.
        by_command: dict[str, set[str]] = {}
        for command, message in answers:
            by_command.setdefault(command, set()).add(message)
        assert all(len(messages) == 1 for messages in by_command.values()), by_command
        assert all("missing" not in m and "inputs.json" not in m for m in by_command[protocol.PREP_RUN])
    finally:
        link.unlink()
    assert (sorted(prep.iterdir()) if prep.exists() else []) == copies_before, "a prep copy was made"
