"""Who owns a task's state while it works (issue 35): the editor's answer is awaited without the
task's locks, and a cancel is a message (an event in this process, a durable record across
processes) rather than a file plus lock probing. Real git repositories, the fixture provider."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from autocode.tasks import AlreadyDecided, NotAwaitingInput, Source, TaskOptions, TaskRun, store
from autocode.tasks.live import LIVE
from autocode.tasks.state import runs_root
from support.tasks import autocode, build_sample

CLI = Source("cli", "tester")
WORDS = "textkit/words.py"
WAIT = 120  # only a bound on a hang


class HeldEditor:
    """An editor with every touched file open (its buffers start as the disk), which holds the edit
    until told to answer, as a person reading the editor's confirmation would."""

    can_apply = True

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.buffers: dict[str, bytes] = {}
        self.holding = threading.Event()
        self.answer = threading.Event()

    def read(self, rel: str) -> bytes | None:
        return self.buffers.get(rel, (self.workspace / rel).read_bytes() if (self.workspace / rel).is_file() else None)

    def open_paths(self, paths: list[str]) -> list[str]:
        return [p for p in paths if (self.workspace / p).is_file()]

    def unsaved(self, paths: list[str]) -> list[str]:
        return [p for p in paths if p in self.buffers and self.buffers[p] != (self.workspace / p).read_bytes()]

    def apply(self, label: str, plans: list) -> tuple[bool | None, str]:  # type: ignore[type-arg]
        self.holding.set()
        assert self.answer.wait(WAIT)
        for plan in plans:
            self.buffers[plan.path] = plan.after
        return True, ""

    def save(self, plans: list) -> list[str]:  # type: ignore[type-arg]
        for plan in plans:
            (self.workspace / plan.path).write_bytes(self.buffers[plan.path])
        return [plan.path for plan in plans]


@pytest.fixture
def verified(tmp_path: Path) -> TaskRun:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(scenario="no-questions"))
    assert run.approve_plan(1, CLI).wire()["needs"]["kind"] == "approve_completion"
    return run


def test_while_the_editor_holds_the_edit_no_lock_is_held_and_a_second_approval_or_cancel_is_refused(
    verified: TaskRun,
) -> None:
    repo = verified.workspace
    editor = HeldEditor(repo)
    done: dict[str, object] = {}
    worker = threading.Thread(target=lambda: done.setdefault("snap", verified.approve_completion(CLI, editor=editor)))
    worker.start()
    try:
        assert editor.holding.wait(WAIT)
        # Neither the run's lock nor the workspace's apply lock is held while the editor decides.
        with store.locked(verified.run_dir, blocking=False) as run_free:
            assert run_free
        with store.locked(runs_root(repo), blocking=False, name=".apply.lock") as apply_free:
            assert apply_free
        other = TaskRun.load(repo, verified.id)
        snap = other.snapshot()
        assert snap.state == "APPLYING"  # worked on (not INTERRUPTED), though the lock is free
        with pytest.raises(AlreadyDecided):
            other.approve_completion(CLI)
        with pytest.raises(NotAwaitingInput) as refused:
            other.cancel()
        assert "editor" in refused.value.message
        assert other.resume().state == "APPLYING"  # nothing runs the apply a second time
    finally:
        editor.answer.set()
        worker.join(WAIT)
    snap = done["snap"].wire()  # type: ignore[attr-defined]
    assert snap["state"] == "COMPLETED", snap
    assert snap["result"]["apply"]["via"] == "editor" and WORDS in snap["result"]["apply"]["writtenByEditor"]
    assert "def longest_word" in (repo / WORDS).read_text()
    events = [e["event"] for e in store.read_events(verified.run_dir / "events.jsonl")]
    assert events.index("handed_to_editor") < events.index("completed")
    assert "changed_while_in_editor" not in events
    assert "editor_handoff" not in (verified.run_dir / "state.json").read_text()


def _verifying(tmp_path: Path) -> tuple[TaskRun, threading.Thread, dict[str, object]]:
    """A task running a test command that would take 60 s, in a thread of this process."""
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(
        scenario="no-questions", test_command="python3 -c 'import time; time.sleep(60)'"))
    running = threading.Event()

    def progress(phase: str, message: str) -> None:
        if phase == "verifying" and message.startswith("running "):
            running.set()

    working = TaskRun.load(repo, run.id, progress=progress)
    done: dict[str, object] = {}
    worker = threading.Thread(target=lambda: done.setdefault("snap", working.approve_plan(1, CLI).wire()))
    worker.start()
    assert running.wait(WAIT), "the task never reached its test command"
    return run, worker, done


def test_a_cancel_in_this_process_is_a_message_the_working_call_sees(tmp_path: Path) -> None:
    run, worker, done = _verifying(tmp_path)
    event = LIVE.event(run.run_dir)
    assert event is not None and not event.is_set()  # the working call registered its cancel event
    TaskRun.load(run.workspace, run.id).cancel()
    worker.join(WAIT)
    assert not worker.is_alive()
    assert event.is_set()  # the message reached the working call
    assert done["snap"]["state"] == "CANCELLED"  # type: ignore[index]
    assert LIVE.event(run.run_dir) is None  # no call works on it any more
    assert not (run.run_dir / "cancel.request").exists()


def test_a_cancel_from_another_process_stops_the_working_call(tmp_path: Path) -> None:
    run, worker, done = _verifying(tmp_path)
    out = autocode("task", "cancel", "--workspace", str(run.workspace), run.id)
    assert out.returncode == 0, out.stderr
    worker.join(WAIT)
    assert not worker.is_alive()
    assert done["snap"]["state"] == "CANCELLED"  # type: ignore[index]
    events = [e["event"] for e in store.read_events(run.run_dir / "events.jsonl")]
    assert "cancel_requested" in events and "cancelled" in events


def test_state_json_is_read_again_only_when_another_call_replaced_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, f"via {patch}")
    reads: list[str] = []
    real = store.read_json

    def counted(path: Path) -> object:
        reads.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(store, "read_json", counted)
    assert [run.snapshot().state for _ in range(3)] == ["WAITING_FOR_USER"] * 3
    assert reads.count("state.json") == 0  # the file this instance committed last
    TaskRun.load(repo, run.id).cancel()  # another caller replaces it
    reads.clear()
    assert run.snapshot().state == "CANCELLED"
    assert reads.count("state.json") == 1
