"""`runwatch.RunWatch` on a real folder: which runs it reports, from no `.autocode` at all to a
`.autocode` removed and made again, with inotify and with the look once a second it falls back to.
Files are written as the engine writes them (`autocode.atomic.write_atomically`: a temporary
file renamed into place)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from autocode.atomic import write_atomically
from autocode_lsp.runwatch import RunWatch


def commit(folder: Path, task_id: str, name: str = "state.json") -> None:
    run = folder / ".autocode" / "runs" / task_id
    run.mkdir(parents=True, exist_ok=True)
    write_atomically(run / name, b"{}")


async def next_batch(watch: RunWatch) -> set[str]:
    return {task_id for _, task_id in await asyncio.wait_for(watch.changed(), timeout=30)}


@pytest.fixture(params=["inotify", "scan"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AUTOCODE_LSP_TASK_WATCH", request.param)
    return str(request.param)


async def test_runs_made_after_the_watch_began_are_reported(tmp_path: Path, how: str) -> None:
    watch = RunWatch([tmp_path])  # no .autocode yet: the first task makes it
    try:
        assert watch.how == how
        commit(tmp_path, "t-1")
        assert "t-1" in await next_batch(watch)
        commit(tmp_path, "t-1")
        commit(tmp_path, "t-2")
        seen: set[str] = set()
        while seen != {"t-1", "t-2"}:
            seen |= await next_batch(watch)
        shutil.rmtree(tmp_path / ".autocode")  # removed by hand, then a new task
        commit(tmp_path, "t-3")
        while "t-3" not in (batch := await next_batch(watch)):
            assert batch <= {"t-1", "t-2"}
    finally:
        watch.close()


async def test_only_a_new_state_reports_a_run(tmp_path: Path) -> None:
    """The views written beside state.json are no change of their own: the next batch holds
    only the run whose state.json was replaced."""
    commit(tmp_path, "t-1")
    commit(tmp_path, "t-2")
    watch = RunWatch([tmp_path])
    try:
        assert watch.how == "inotify"
        commit(tmp_path, "t-1", "plan.md")
        commit(tmp_path, "t-2", "state.json")
        assert await next_batch(watch) == {"t-2"}
    finally:
        watch.close()


async def test_a_folder_added_later_is_followed(tmp_path: Path, how: str) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    watch = RunWatch([first])
    try:
        watch.follow([second])
        commit(second, "t-9")
        assert await next_batch(watch) == {"t-9"}
    finally:
        watch.close()
