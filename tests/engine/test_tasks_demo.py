"""`make demo` without a terminal, and `task start` driven through a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support.tasks import REPO, build_sample, cli_env, read_record, run_dirs


def test_demo_runs_both_tasks_without_a_terminal(tmp_path: Path) -> None:
    workspace = tmp_path / "demo-workspace"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "demo.py"), "--workspace", str(workspace)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=cli_env(), timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no terminal: answers and approvals come from" in proc.stdout
    assert proc.stderr.count("Q [test-naming]") == 1  # asked by task 1 only
    assert "not asked this time (already known or not needed): test-naming" in proc.stderr
    assert "Learned conventions: 1" in proc.stdout or "Use descriptive behavior-based" in proc.stdout
    record = read_record(workspace)
    assert record is not None and len(record["conventions"]) == 1
    text = (workspace / "textkit" / "words.py").read_text()
    assert "def longest_word" in text and "def shortest_word" in text


def _run_in_pty(
    args: list[str], answers: list[str], timeout: float = 90, before: Any = None
) -> tuple[int | None, str]:
    """Run the CLI on a pseudo-terminal, typing each answer when a prompt appears
    (`before(n)` runs just before the n-th answer is typed)."""
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "autocode", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=cli_env(), close_fds=True)
    os.close(slave)
    output = b""
    answered_up_to = 0
    pending = list(answers)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        elif proc.poll() is not None:
            break
        fresh = output[answered_up_to:]
        if pending and (fresh.endswith(b"> ") or fresh.endswith(b"]ancel: ") or fresh.endswith(b"later: ")):
            if before is not None:
                before(len(answers) - len(pending))
            os.write(master, (pending.pop(0) + "\n").encode())
            answered_up_to = len(output)
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)
    os.close(master)
    return proc.returncode, output.decode("utf-8", "replace")


def test_task_start_asks_in_a_terminal(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    code, out = _run_in_pty(
        ["task", "start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch}"],
        ["Name tests after behaviour, in full sentences.", "y", "y"],
    )
    assert code == 0, out
    assert "Which naming convention should future repository tests follow?" in out
    assert "Approve this plan?" in out and "Apply these changes to your workspace?" in out
    assert re.search(r"COMPLETED", out)
    record = read_record(repo)
    assert record is not None
    assert record["conventions"][0]["answer"] == "Name tests after behaviour, in full sentences."
    runs = run_dirs(repo)
    ledger = json.loads((runs[0] / "ledger.json").read_text())
    assert ledger["answers"][0]["kind"] == "human"


def test_a_conflict_is_chosen_in_the_terminal(tmp_path: Path) -> None:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    words = repo / "textkit" / "words.py"
    mine = words.read_text() + "\n\ndef longest_word(text):\n    return 'mine'\n"

    def edit_meanwhile(n: int) -> None:
        if n == 2:  # while the person looks at the verified change, they edit the same place
            words.write_text(mine)

    code, out = _run_in_pty(
        ["task", "start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch}"],
        ["Name tests after behaviour, in full sentences.", "y", "y", "m"],
        before=edit_meanwhile,
    )
    assert "textkit/words.py (overlap): keep [m]ine" in out, out
    assert code == 0 and "COMPLETED" in out, out
    assert words.read_text() == mine
    assert "longest_word_picks_the_longest" in (repo / "tests" / "test_words.py").read_text()
