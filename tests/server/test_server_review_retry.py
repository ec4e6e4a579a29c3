"""The review and the ways out, over LSP with the real server process and real git repositories:
`autocode.task.preview` shows git's merge against the editor's text before anything is written,
`approveCompletion` with `keep` applies only the kept hunks, a failed verification is retried
from a code action once the test command is fixed, and a server killed mid-step leaves the task
INTERRUPTED with Resume offered by the next server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_server_actions import actions, run_action
from test_server_apply_authority import GREET, GREET_TEST, NOTE, _client, _tree, _verified
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support.lsp import close, connect, initialize

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")


async def test_the_preview_merges_against_the_editors_text_and_keep_applies_a_part(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    session = await _client(tmp_path, repo, "lsp", opt_in=True)
    try:
        snap = await _verified(session, repo)
        greet = repo / GREET
        before = _tree(repo)
        buffer = NOTE + greet.read_text()
        preview = await session.command(protocol.TASK_PREVIEW, {
            "taskId": snap["id"], "documents": {greet.as_uri(): buffer},
        })
        assert _tree(repo) == before and session.edits == []  # a preview writes nothing
        files = {f["path"]: f for f in preview["files"]}
        assert files[GREET]["mine"] == buffer
        assert files[GREET]["merged"].startswith(NOTE) and "hello and goodbye" in files[GREET]["merged"]
        assert preview["overlaps"] == 0 and all(not h["overlaps"] for h in files[GREET]["hunks"])
        assert files[GREET_TEST]["hunks"], files[GREET_TEST]
        # A document that is not in the workspace is refused, nothing read or written.
        outside = tmp_path / "elsewhere.py"
        bad = await session.command_error(protocol.TASK_PREVIEW, {
            "taskId": snap["id"], "documents": {outside.as_uri(): "x = 1\n"},
        })
        assert bad.data["kind"] == "invalidArguments" and "not inside the task's workspace" in bad.message
        unknown = await session.command_error(protocol.TASK_APPROVE_COMPLETION, {
            "taskId": snap["id"], "keep": ["h-000000000000"],
        })
        assert unknown.data["kind"] == "hunksChanged" and _tree(repo) == before
        # Keep greet.py's hunks (ids from the preview of the unsaved buffer), undo the test's.
        keep = [h["id"] for h in files[GREET]["hunks"]]
        done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": snap["id"], "keep": keep})
        assert done["state"] == "COMPLETED", done
        assert done["result"]["partial"] is True and done["result"]["verified"] is False
        assert done["result"]["apply"]["hunksKept"] == keep
        assert sorted(done["result"]["apply"]["hunksUndone"]) == sorted(h["id"] for h in files[GREET_TEST]["hunks"])
        assert "hello and goodbye" in greet.read_text()
        assert (repo / GREET_TEST).read_bytes() == before[GREET_TEST]
    finally:
        await close(session)


async def test_a_failed_verification_is_retried_from_a_code_action(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    config = repo / ".autocode" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text('test_command = "python3 -m no_such_test_runner"\n')
    session = await _client(tmp_path, repo, "lsp")
    try:
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "workspace": str(repo)})
        snap = await session.command(protocol.TASK_ANSWER, {
            "taskId": snap["id"], "questionId": "test-naming", "text": NAMING_ANSWER})
        snap = await session.command(protocol.TASK_APPROVE_PLAN, {
            "taskId": snap["id"], "revision": snap["needs"]["planRevision"]})
        assert snap["state"] == "FAILED" and snap["error"]["phase"] == "verifying", snap
        titles = [a.title for a in await actions(session, repo)]
        assert any(t.startswith("AutoCode: retry verification of") for t in titles), titles
        config.write_text(f'test_command = "{TEST_COMMAND}"\n')  # the person fixes the command
        retried = await run_action(session, repo, "AutoCode: retry verification of")
        assert retried["state"] == "WAITING_FOR_COMPLETION_APPROVAL", retried["error"]
        assert retried["needs"]["proof"]["status"] == "verified"
        assert retried["needs"]["tests"]["command"] == TEST_COMMAND
        # Nothing to retry now but the approval's own retry: a plan-stage task gets no such action.
        refused = await session.command_error(protocol.TASK_RETRY_VERIFICATION, {"taskId": "t-20000101-000000-000000"})
        assert refused.data["kind"] == "taskNotFound"
    finally:
        await close(session)


async def test_a_server_killed_while_verifying_leaves_an_interrupted_task_with_resume(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    env = {**os.environ, "AUTOCODE_TEST_KILL_AT": "in:VERIFYING"}
    first = await connect("stdio", log_file=tmp_path / "a.log", env=env)
    await initialize(first, preset="neovim", folders=[repo])
    snap = await first.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
    task_id = snap["id"]
    snap = await first.command(protocol.TASK_ANSWER, {
        "taskId": task_id, "questionId": snap["needs"]["questions"][0]["id"], "text": NAMING_ANSWER})
    with pytest.raises(Exception):  # noqa: B017 - the connection dies with the process
        await asyncio.wait_for(first.command(protocol.TASK_APPROVE_PLAN, {
            "taskId": task_id, "revision": snap["needs"]["planRevision"]}), timeout=60)
    assert first.process is not None
    await asyncio.wait_for(first.process.wait(), timeout=30)
    assert first.process.returncode == -signal.SIGKILL
    await first.client.stop()

    second = await _client(tmp_path, repo, "b")
    try:
        [left] = [t for t in (await second.command(protocol.TASK_LIST))["tasks"] if t["id"] == task_id]
        assert (left["state"], left["interruptedIn"]) == ("INTERRUPTED", "VERIFYING")
        titles = [a.title for a in await actions(second, repo)]
        assert any(t.startswith("AutoCode: resume '") and "interrupted while verifying" in t for t in titles), titles
        assert any(t.startswith("AutoCode: retry verification of") for t in titles), titles
        resumed = await run_action(second, repo, "AutoCode: resume '")
        assert resumed["needs"]["kind"] == "approve_completion" and resumed["interruptedIn"] is None
    finally:
        await close(second)


STARTER = """
import sys
from pathlib import Path
from autocode.sandbox.process import run_streaming
here = Path(sys.argv[1])
run_streaming(["sh", "-c", "sleep 300 & echo $! > grandchild.pid; echo $$ > child.pid; wait"],
              cwd=here, env={"PATH": "/usr/bin:/bin"}, timeout=300, cancelled=lambda: False,
              output_file=None, on_output=None)
"""


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"


async def _until(check: Any, what: str) -> None:
    for _ in range(1500):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(what)


async def test_the_next_server_ends_what_a_killed_one_left_running(tmp_path: Path) -> None:
    from autocode.sandbox import children

    repo = build_repo(tmp_path / "project")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # A process that ran a test command, killed (as a server killed mid-step): its command's
    # child is left in the command's process group.
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)], env=env)
    await _until(lambda: (tmp_path / "grandchild.pid").is_file() and (tmp_path / "grandchild.pid").read_text().strip()
                 and (tmp_path / "child.pid").is_file(), "the command started")
    child = int((tmp_path / "child.pid").read_text())
    left = int((tmp_path / "grandchild.pid").read_text())
    await _until(lambda: (children.folder() / f"{child}.json").is_file(), "the group was written down")
    starter.kill()
    starter.wait(30)
    await _until(lambda: not _alive(child), "the command died with its starter")
    assert _alive(left)  # what the command started is still there
    session = await _client(tmp_path, repo, "next")
    try:
        await _until(lambda: not _alive(left), f"the new server did not end {left}")
        # The reap ends the group, then removes its record: a look between the two sees both.
        await _until(lambda: not (children.folder() / f"{child}.json").exists(), "the group's record was not removed")
    finally:
        await close(session)
