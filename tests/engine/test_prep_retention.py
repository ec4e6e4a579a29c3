"""Disk that does not grow without bound: killed preps reclaimed, finished copies removed, prune."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from autocode.prep import make_prep_copy
from autocode.prep.retention import mark_finished, prune, prune_workspace, usage
from autocode.tasks import Source, TaskRun
from support import make_repo
from support.tasks import NAMING_ANSWER, autocode, build_sample, cli_env

ME = Source("cli", "tester")


def _prep_folders(ws: Path) -> list[Path]:
    base = ws / ".autocode" / "prep"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def _staging(ws: Path) -> list[Path]:
    return [p for p in _prep_folders(ws) if not (p / "source").exists()]


def _wait_until_group_gone(pgid: int) -> None:
    """Until no process of the group is alive (a zombie has closed its files already)."""
    deadline = time.monotonic() + 30
    while True:
        alive = []
        for entry in Path("/proc").iterdir():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(entry.name)
        if not alive:
            return
        assert time.monotonic() < deadline, f"processes of the killed group live on: {alive}"
        time.sleep(0.01)


def test_killed_preps_are_reclaimed_by_the_next_prep(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {f"pkg{i // 50}/m{i}.py": f"V = {i}\n" * 40 for i in range(600)})
    command = [sys.executable, "-m", "autocode", "prep", "--workspace", str(ws)]
    started = time.monotonic()
    subprocess.run(command, env=cli_env(), capture_output=True, check=True, timeout=120)
    whole = time.monotonic() - started
    rng = random.Random(13)
    left_behind = kills = 0
    # 20 kills at random moments; on a loaded machine a process's start-up time varies, so
    # kill more (up to 60) until some landed inside the copy (else this test shows nothing).
    while kills < 20 or (left_behind == 0 and kills < 60):
        proc = subprocess.Popen(command, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        if kills < 20:
            # A random moment to kill at (not a wait for anything): cut short if the prep ended.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=rng.uniform(0.1, 1.0) * whole)
        else:
            # None of the random moments landed inside a copy (a loaded machine starts slower
            # than the timed run): kill as soon as the copy's staging folder is there.
            deadline = time.monotonic() + 60
            while not _staging(ws) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
        # The whole process group, as a closed terminal or a killed editor does: a copy's second
        # process would otherwise go on writing the staging folder after its parent died.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # The group's second process may still be exiting with its copy of the owner lock open:
        # the next prep rightly leaves a folder alone while that lasts.
        _wait_until_group_gone(proc.pid)
        kills += 1
        left_behind += len(_staging(ws))
        make_prep_copy(ws)
        assert _staging(ws) == [], "a killed prep's staging folder outlived the next prep"
    assert left_behind > 0
    report = usage(ws)
    assert report["staging"]["count"] == 0 and report["copies"]["count"] >= 20


def test_a_live_prep_is_never_reclaimed(tmp_path: Path) -> None:
    import fcntl

    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    live = ws / ".autocode" / "prep" / "20200101T000000-live0000"
    (live / ".staging").mkdir(parents=True)
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        make_prep_copy(ws)
        assert (live / ".staging").is_dir()
        assert prune(ws).in_use == [live.name]
    finally:
        os.close(fd)
    make_prep_copy(ws)
    assert not live.exists()


def _drive(run: TaskRun) -> dict[str, Any]:
    snap = run.snapshot().wire()
    for _ in range(6):
        kind = (snap.get("needs") or {}).get("kind")
        if kind == "answer_questions":
            snap = run.answer(snap["needs"]["questions"][0]["id"], NAMING_ANSWER, ME).wire()
        elif kind == "approve_plan":
            snap = run.approve_plan(snap["needs"]["planRevision"], ME).wire()
        elif kind == "approve_completion":
            # These tasks run `true` as their tests: no per-test output, so nothing proves a
            # change and each is confirmed as unproven (retention is what is tested here).
            assert snap["needs"]["confirmation"] == "unproven", snap["needs"]
            assert snap["needs"]["proof"]["status"] == "unproven"
            snap = run.approve_completion(ME, confirm="unproven").wire()
        else:
            break
    return snap


def test_completed_tasks_leave_no_prep_copy(tmp_path: Path) -> None:
    """keep_prep_copies is 0 unless set: every task removes its copy when it ends, so a few tasks in
    a row show that none is left behind (each is checked as it ends)."""
    repo, patch = build_sample("pytest", tmp_path / "shop")
    originals = {rel: (repo / rel).read_bytes() for rel in ("shop/pricing.py", "tests/test_pricing.py")}
    for n in range(5):
        run = TaskRun.start(repo, f"Add total_with_tax ({n}). Patch: {patch}", {"test_command": "true"})
        snap = _drive(run)
        assert snap["state"] == "COMPLETED", snap
        for rel, data in originals.items():
            (repo / rel).write_bytes(data)
        assert _prep_folders(repo) == [], f"task {n} left its prep copy"
    evidence = Path(snap["runDir"]) / "evidence"
    inventory = json.loads((evidence / "prep-inventory.json").read_text())
    assert inventory["files"] > 0
    assert any(p == "shop/pricing.py" for p, _size in inventory["paths"])
    for name in ("changes.diff", "tests.json", "test-output.txt"):
        assert (evidence / name).is_file()


def test_keep_prep_copies_keeps_the_newest_and_doctor_shows_it(tmp_path: Path) -> None:
    repo, patch = build_sample("pytest", tmp_path / "shop")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text("keep_prep_copies = 2\n", encoding="utf-8")
    originals = {rel: (repo / rel).read_bytes() for rel in ("shop/pricing.py", "tests/test_pricing.py")}
    copies = []
    for n in range(3):
        run = TaskRun.start(repo, f"Add total_with_tax ({n}). Patch: {patch}", {"test_command": "true"})
        copies.append(Path(run.snapshot().wire()["copy"]).parent.name)
        assert _drive(run)["state"] == "COMPLETED"
        for rel, data in originals.items():
            (repo / rel).write_bytes(data)
    assert sorted(p.name for p in _prep_folders(repo)) == sorted(copies[1:])
    proc = autocode("doctor", "--workspace", str(repo), "--json", env=cli_env())
    prep = json.loads(proc.stdout)["prep"]
    assert prep["copies"]["count"] == 2 and prep["finished"] == 2 and prep["copies"]["bytes"] > 0
    assert prep["keep_prep_copies"]["value"] == 2 and prep["keep_prep_copies"]["origin"] != "default"
    text = autocode("doctor", "--workspace", str(repo), env=cli_env()).stdout
    assert "Prep copies: 2" in text and "keep_prep_copies = 2" in text

    proc = autocode("prep", "prune", "--workspace", str(repo), "--keep", "0", "--json", env=cli_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["removed"] == sorted(copies[1:])
    assert _prep_folders(repo) == []


def test_a_cancelled_task_releases_its_copy(tmp_path: Path) -> None:
    repo, patch = build_sample("pytest", tmp_path / "shop")
    run = TaskRun.start(repo, f"Add total_with_tax. Patch: {patch}")
    assert len(_prep_folders(repo)) == 1
    run.cancel()
    assert run.snapshot().wire()["state"] == "CANCELLED"
    assert _prep_folders(repo) == []


def test_prune_keeps_copies_of_tasks_in_progress_and_removes_loose_ones(tmp_path: Path) -> None:
    repo, patch = build_sample("pytest", tmp_path / "shop")
    run = TaskRun.start(repo, f"Add total_with_tax. Patch: {patch}")
    mine = Path(run.snapshot().wire()["copy"]).parent
    loose = make_prep_copy(repo).copy.parent
    proc = autocode("prep", "prune", "--workspace", str(repo), "--json", env=cli_env())
    data = json.loads(proc.stdout)
    assert data["inUse"] == [mine.name] and data["recent"] == [loose.name] and data["removed"] == []
    old = time.time() - 3600
    os.utime(loose, (old, old))
    proc = autocode("prep", "prune", "--workspace", str(repo), env=cli_env())
    assert proc.returncode == 0 and f"removed {loose.name}" in proc.stdout
    assert mine.is_dir() and not loose.exists()


@pytest.mark.parametrize("args", [["--manifest", "m.json"], ["--report", "r.json"]])
def test_prune_refuses_prep_only_flags(tmp_path: Path, args: list[str]) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    proc = autocode("prep", "prune", "--workspace", str(ws), *args, env=cli_env())
    assert proc.returncode == 2 and "prune takes no" in proc.stderr


def _finished_copies(repo: Path, count: int) -> list[str]:
    """`count` prep copies whose tasks ended (oldest first), made over a minute ago."""
    names = []
    for n in range(count):
        copy = make_prep_copy(repo).copy.parent
        mark_finished(repo, copy.name)
        old = time.time() - 3600 + n
        os.utime(copy, (old, old))
        names.append(copy.name)
    return names


def test_prune_workspace_keeps_what_the_settings_say_unless_told(tmp_path: Path) -> None:
    """The engine resolves `keep_prep_copies` for a prune; the CLI passes only its flag."""
    repo = make_repo(tmp_path / "ws", {"a.py": "a\n", ".autocode/config.toml": "keep_prep_copies = 1\n"})
    names = _finished_copies(repo, 3)
    data = prune_workspace(repo)
    assert data["keep"] == 1 and data["workspace"] == str(repo.resolve())
    assert sorted(data["removed"]) == sorted(names[:2]) and data["kept"] == names[2:]
    assert prune_workspace(repo, 0)["removed"] == names[2:]
    assert _prep_folders(repo) == []


def test_prune_refuses_a_negative_keep_and_removes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    names = _finished_copies(repo, 1)
    proc = autocode("prep", "prune", "--workspace", str(repo), "--keep", "-1", env=cli_env())
    assert proc.returncode == 2 and "--keep -1: give 0 or more" in proc.stderr
    with pytest.raises(ValueError, match="give 0 or more"):
        prune_workspace(repo, -1)
    assert [p.name for p in _prep_folders(repo)] == names
