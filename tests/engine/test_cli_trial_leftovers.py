"""Leftovers of a new-user trial of the CLI, each through the real CLI on a real sample repository."""

from __future__ import annotations

from pathlib import Path

from support.tasks import NAMING_ANSWER, autocode, autocode_json, build_sample


def _awaiting_completion(tmp_path: Path) -> tuple[str, str]:
    repo, patch = build_sample("pytest", tmp_path / "shop")
    ws = str(repo)
    rc, snap = autocode_json("task", "start", "--workspace", ws, "--brief", f"Add total_with_tax. Patch: {patch}")
    assert rc == 0, snap
    task_id = snap["id"]
    rc, snap = autocode_json("task", "answer", "--workspace", ws, task_id, "test-naming", NAMING_ANSWER)
    rc, snap = autocode_json("task", "approve", "--workspace", ws, task_id, "--revision", str(snap["needs"]["planRevision"]))
    assert rc == 0 and snap["needs"]["kind"] == "approve_completion", snap
    return ws, task_id


def test_approving_completion_without_a_terminal_shows_the_diff_first(tmp_path: Path) -> None:
    ws, task_id = _awaiting_completion(tmp_path)
    proc = autocode("task", "approve-completion", "--workspace", ws, task_id)  # stdin is not a terminal
    assert proc.returncode == 0, proc.stderr
    assert "Approving this change" in proc.stderr and "Verdict:" in proc.stderr
    assert "+def total_with_tax" in proc.stderr or "total_with_tax" in proc.stderr.split("Changes:", 1)[1]
    assert f"autocode task show --workspace {ws} {task_id}" in proc.stderr
    assert "COMPLETED" in proc.stdout
