"""Every failure has its way out (real git repositories, real processes): a verification that
failed is run again on the same change once the person fixed the test command; a step whose
process was killed says INTERRUPTED and resumes; a program a task started dies with the process
that started it, and what it left behind is ended on the next start (read from /proc)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autocode.tasks import NotAwaitingInput, Source, TaskOptions, TaskRun
from support.tasks import answers_file, autocode, build_sample, cli_env, run_dirs

CLI = Source("cli", "tester")
GOOD = "python3 -m unittest discover -s tests -t ."
BAD = "python3 -c 'raise SystemExit(3)'"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_sample("unittest", tmp_path / "textkit")[0]


def _config(repo: Path, command: str) -> None:
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(f'test_command = "{command}"\n', encoding="utf-8")


def _approvals(run: TaskRun) -> list[dict]:
    return json.loads((run.run_dir / "approvals.json").read_text())["approvals"]


def test_a_failed_verification_is_retried_with_the_fixed_test_command(repo: Path) -> None:
    _config(repo, BAD.replace('"', '\\"'))
    run = TaskRun.start(repo, "via patches/add-longest-word.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["state"] == "FAILED" and snap["error"]["kind"] == "testsFailed"
    diff_before = (run.run_dir / "evidence" / "changes.diff").read_bytes()
    _config(repo, GOOD)  # the person fixes the test command
    snap = run.retry_verification(CLI).wire()
    assert snap["state"] == "WAITING_FOR_COMPLETION_APPROVAL", snap["error"]
    assert snap["needs"]["proof"]["status"] == "verified" and snap["error"] is None
    assert snap["needs"]["tests"]["command"] == GOOD
    # The same change, proved again: nothing was implemented anew.
    assert (run.run_dir / "evidence" / "changes.diff").read_bytes() == diff_before
    retry = [a for a in _approvals(run) if a["kind"] == "retry_verification"]
    assert len(retry) == 1 and retry[0]["tests"]["command"] == GOOD and retry[0]["source"]["channel"] == "cli"
    events = [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]
    [retried] = [e for e in events if e["event"] == "verification_retried"]
    assert retried["before"]["error"] == "testsFailed" and retried["command_changed"] is True
    done = run.approve_completion(CLI).wire()
    assert done["state"] == "COMPLETED" and done["result"]["verified"] is True


def test_the_cli_names_and_runs_the_retry_of_a_failed_verification(repo: Path) -> None:
    _config(repo, BAD.replace('"', '\\"'))
    run = TaskRun.start(repo, "via patches/add-longest-word.patch", TaskOptions(scenario="no-questions"))
    assert run.approve_plan(1, CLI).wire()["state"] == "FAILED"
    status = autocode("task", "status", "--workspace", str(repo), run.id)
    assert f"autocode task retry --workspace {repo} {run.id}" in status.stdout, status.stdout
    _config(repo, GOOD)  # the person fixes the test command, then retries from the terminal
    proc = autocode("task", "retry", "--workspace", str(repo), run.id, "--json", timeout=300)
    snap = json.loads(proc.stdout)
    assert snap["state"] == "WAITING_FOR_COMPLETION_APPROVAL" and snap["needs"]["proof"]["status"] == "verified", proc


def test_a_retry_while_waiting_for_approval_proves_again_and_keeps_the_change(repo: Path) -> None:
    run = TaskRun.start(repo, "via patches/add-longest-word.patch", TaskOptions(scenario="no-questions"))
    first = run.approve_plan(1, CLI).wire()
    assert first["needs"]["kind"] == "approve_completion"
    snap = run.retry_verification(CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion" and snap["revision"] > first["revision"]
    assert snap["needs"]["diff"] == first["needs"]["diff"]


def test_nothing_to_retry_is_refused_with_the_state_named(repo: Path) -> None:
    run = TaskRun.start(repo, "via patches/add-longest-word.patch", TaskOptions(scenario="no-questions"))
    before = run.snapshot().wire()
    assert before["needs"]["kind"] == "approve_plan"
    with pytest.raises(NotAwaitingInput, match="WAITING_FOR_PLAN_APPROVAL"):
        run.retry_verification(CLI)
    assert run.snapshot().wire()["revision"] == before["revision"]  # nothing recorded


def test_a_step_killed_mid_verification_is_interrupted_then_resumes(repo: Path, tmp_path: Path) -> None:
    proc = autocode(
        "task", "start", "--workspace", str(repo), "--brief", "via patches/add-longest-word.patch",
        "--answers", str(answers_file(tmp_path / "answers.json", completion=False)),
        env=cli_env(AUTOCODE_TEST_KILL_AT="in:VERIFYING"),
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    [run_dir] = run_dirs(repo)
    run = TaskRun.load(repo, run_dir.name)
    snap = run.snapshot().wire()
    assert snap["state"] == "INTERRUPTED" and snap["interruptedIn"] == "VERIFYING" and not snap["done"]
    listed = autocode("task", "list", "--workspace", str(repo), "--json")
    assert "INTERRUPTED" in listed.stdout
    snap = run.retry_verification(CLI).wire()  # or resume: both go on from the step
    assert snap["needs"]["kind"] == "approve_completion" and snap["interruptedIn"] is None


# ---------------------------------------------------------------------- programs left behind

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
    """A process that runs (a zombie waiting for its parent to read it is not)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"


def _wait_for(check: object, what: str) -> None:
    deadline = time.monotonic() + 30
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_killed_starter_leaves_no_program_running(tmp_path: Path) -> None:
    from autocode.sandbox import children, reap_orphans

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)], env=env)
    # `echo $$ > child.pid` makes the file before it writes the number: wait for both numbers.
    _wait_for(lambda: all((tmp_path / name).is_file() and (tmp_path / name).read_text().strip()
                          for name in ("child.pid", "grandchild.pid")), "the program started")
    child = int((tmp_path / "child.pid").read_text())
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert _alive(child) and _alive(grandchild)
    # The starter writes its program's group down right after starting it.
    _wait_for(lambda: (children.folder() / f"{child}.json").is_file(), "the group was written down")
    starter.send_signal(signal.SIGKILL)  # as a server killed mid-step
    starter.wait(30)
    # The program it started dies with it (the kernel's parent-death signal) ...
    _wait_for(lambda: not _alive(child), f"the started program {child} outlived its starter")
    # ... and what that program left in its group is ended on the next start.
    assert reap_orphans() == [child] or not _alive(grandchild)
    _wait_for(lambda: not _alive(grandchild), f"the left-behind {grandchild} is still running")
    assert reap_orphans() == []  # the record went with it
