"""Task changes made by another process reach a session as they happen (`runwatch.py`), and an idle
session looks at nothing meanwhile.

The real server over stdio with the pytest-lsp client; the other process is the real `autocode`
CLI (`autocode task start`, `autocode task answer`) on a real sample repository with the engine's
offline fixture provider.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from support.lsp import Session, child_env, close, connect, initialize, wait_until
from support.tasks import NAMING_ANSWER, autocode, build_sample

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")
pytestmark = pytest.mark.timeout(300)


async def cli(*args: str) -> dict[str, Any]:
    """`autocode task ... --json` in another process (off the event loop: the session keeps reading)."""
    proc = await asyncio.to_thread(autocode, "task", *args, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def heard(session: Session, task_id: str, revision: int) -> bool:
    return any(n["task"]["id"] == task_id and n["revision"] >= revision for n in session.did_change)


async def opted_in_session(tmp_path: Path, repo: Path, watch: str | None = None) -> Session:
    env = child_env()
    env.pop("AUTOCODE_LSP_TASK_WATCH", None)
    if watch is not None:
        env["AUTOCODE_LSP_TASK_WATCH"] = watch
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
    await initialize(session, preset="vscode", folders=[repo], opt_in=True)
    return session


@pytest.mark.parametrize("watch", [None, "scan"], ids=["inotify", "scan-fallback"])
async def test_a_task_the_cli_starts_and_answers_reaches_the_session(tmp_path: Path, watch: str | None) -> None:
    """No task yet (no `.autocode/runs` to watch): the CLI starts one, then answers its question;
    each state reaches the session as `autocode/task/didChange`, by inotify or by the fallback."""
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    session = await opted_in_session(tmp_path, repo, watch)
    try:
        started = await cli("start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch}")
        assert started["needs"]["kind"] == "answer_questions"
        await wait_until(lambda: heard(session, started["id"], started["revision"]), what="the started task")
        answered = await cli("answer", started["id"], "test-naming", NAMING_ANSWER, "--workspace", str(repo))
        assert answered["revision"] > started["revision"]
        await wait_until(lambda: heard(session, started["id"], answered["revision"]), what="the answered task")
        last = [n for n in session.did_change if n["task"]["id"] == started["id"]][-1]
        assert last["task"]["needs"]["kind"] == answered["needs"]["kind"]
    finally:
        await close(session)
    log = (tmp_path / "lsp.log").read_text(encoding="utf-8")
    if watch == "scan":
        assert log.count("looked for once a second") == 1, log
    else:
        assert "noticed with inotify" in log and "looked for once a second" not in log, log


# x86_64 and aarch64 numbers of the calls an asyncio loop waits in, and the argument that is the timeout.
EPOLL_WAITS = {"x86_64": {232: 3, 281: 3}, "aarch64": {22: 3}}


def loop_wait(pid: int) -> int | None:
    """The timeout (ms, -1 for none) of the epoll wait a thread of `pid` is blocked in; None while
    no thread is (the loop is running). /proc/<pid>/task/<tid>/syscall: number, then arguments."""
    calls = EPOLL_WAITS[os.uname().machine]
    for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
        try:
            fields = (task / "syscall").read_text().split()
        except OSError:
            continue
        if fields and fields[0].isdigit() and int(fields[0]) in calls:
            raw = int(fields[1 + calls[int(fields[0])]], 16) & 0xFFFFFFFF
            return raw - (1 << 32) if raw >= 1 << 31 else raw
    return None


@pytest.mark.skipif(os.uname().machine not in EPOLL_WAITS, reason="epoll call numbers known for x86_64 and aarch64")
async def test_an_idle_session_with_waiting_tasks_has_nothing_to_look_at(tmp_path: Path) -> None:
    """Three tasks wait for a person; once the session has heard them, its event loop sleeps with no
    deadline: nothing is scheduled, so nothing polls the run folders (the look once a second this
    replaces kept a wake-up at most 1 s away). The kernel shows the timeout the loop waits with."""
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    tasks = [await cli("start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch} ({n})")
             for n in range(3)]
    session = await opted_in_session(tmp_path, repo)
    try:
        await wait_until(lambda: all(heard(session, t["id"], t["revision"]) for t in tasks), timeout=120,
                         what="the waiting tasks announced")
        assert session.process is not None
        pid = session.process.pid
        waits: list[int] = []

        def idle() -> bool:
            # -1: no timer at all; a question waiting for the editor's reply would allow 900 s.
            # A reply the session still waits for (a code-lens refresh: 30 s) passes once it
            # comes; the look once a second never let the loop sleep longer than 1000 ms.
            timeout = loop_wait(pid)
            if timeout is not None and timeout != 0:
                waits.append(timeout)
            return timeout == -1 or (timeout or 0) >= 60_000

        try:
            await wait_until(idle, timeout=120, what="the server's event loop sleeping with no deadline")
        except AssertionError as exc:
            raise AssertionError(f"the idle loop kept waking: its waits (ms) were {sorted(set(waits))[:20]}") from exc
        await cli("answer", tasks[0]["id"], "test-naming", NAMING_ANSWER, "--workspace", str(repo))
        await wait_until(lambda: heard(session, tasks[0]["id"], tasks[0]["revision"] + 1),
                         what="a change heard by the idle session")
    finally:
        await close(session)
