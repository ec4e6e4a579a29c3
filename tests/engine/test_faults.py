"""Faults are errors, not tracebacks: a full disk, a read-only or protected workspace, a deep
manifest, a link swapped during the copy, an unreadable file.

Each ends in exit 2 with what to do (or a typed error kind), and the
workspace and its record are byte-identical afterwards: no half-written file,
no temp file. The disk tests use real mounts (a small tmpfs, a read-only bind
mount), `chattr +i` and a user namespace, so they need root; elsewhere they
are skipped.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.errors import AutoCodeError
from autocode.prep import copier, make_prep_copy
from autocode.record import ObservedFacts, merge_record
from support import git, make_repo
from support.tasks import autocode, cli_env

RECORD = '{\n  "version": 1,\n  "framework": "pytest",\n  "test_command": "python -m pytest"\n}\n'
ROOT = os.geteuid() == 0


def _snapshot(folder: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_file():
                try:
                    out[rel] = ("file", path.read_bytes(), st.st_mode)
                except PermissionError:
                    out[rel] = ("unreadable", st.st_size, st.st_mode)
            else:
                out[rel] = ("dir", st.st_mode)
    return out


def _workspace(root: Path, files: dict[str, str | bytes] | None = None) -> Path:
    ws = make_repo(root, {"app.py": "print('hi')\n", **(files or {})})
    (ws / ".autocode").mkdir()
    (ws / ".autocode" / "project.json").write_text(RECORD, encoding="utf-8")
    return ws


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Remedy" in proc.stderr or "remedy" in proc.stderr.lower(), proc.stderr


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here: {proc.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if not ROOT or shutil.which("mount") is None:
        pytest.skip("a tmpfs needs root")
    where = tmp_path / "disk"
    where.mkdir()
    _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path, leave: int) -> None:
    """Fill `disk` until about `leave` bytes are free."""
    free = shutil.disk_usage(disk).free
    with (disk / "filler").open("wb") as handle:
        if free > leave:
            handle.write(b"\0" * (free - leave))
    if leave:
        return
    fd = os.open(disk / "last", os.O_WRONLY | os.O_CREAT)  # the last few blocks
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_full_disk_ends_prep_and_task_start_with_exit_2(small_disk: Path) -> None:
    ws = _workspace(small_disk / "ws", {"data.bin": os.urandom(900_000)})
    _fill(small_disk, 300_000)
    before = _snapshot(ws)
    proc = autocode("prep", "--workspace", str(ws), env=cli_env())
    _no_traceback(proc)
    assert "No space left" in proc.stderr and "autocode prep prune" in proc.stderr
    assert _snapshot(ws) == before
    proc = autocode("prep", "--workspace", str(ws), "--json", env=cli_env())
    assert json.loads(proc.stdout)["error"]["kind"] == "noSpace"
    proc = autocode("task", "start", "--workspace", str(ws), "--brief", "Add a greeting", env=cli_env())
    _no_traceback(proc)
    assert _snapshot(ws) == before


def test_a_full_disk_leaves_the_record_and_no_temp_file(small_disk: Path) -> None:
    ws = _workspace(small_disk / "ws")
    _fill(small_disk, 0)
    before = _snapshot(ws)
    result = merge_record(ws, ObservedFacts(framework="unittest", test_command="python -m unittest"), [])
    assert not result.written and result.errors
    assert _snapshot(ws) == before


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    if not ROOT:
        pytest.skip("a read-only bind mount needs root")
    ws = _workspace(tmp_path / "ws")
    view = tmp_path / "ro"
    view.mkdir()
    _mount("--bind", str(ws), str(view))
    try:
        _mount("-o", "remount,ro,bind", str(view))
        yield ws, view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


def test_a_read_only_workspace_is_exit_2(read_only: tuple[Path, Path]) -> None:
    ws, view = read_only
    before = _snapshot(ws)
    for args in (["prep"], ["forget"], ["task", "start", "--brief", "Add a greeting"]):
        proc = autocode(*args, "--workspace", str(view), env=cli_env())
        _no_traceback(proc)
        assert "read-only" in proc.stderr.lower(), (args, proc.stderr)
    proc = autocode("prep", "--workspace", str(view), "--json", env=cli_env())
    assert json.loads(proc.stdout)["error"]["kind"] == "readOnly"
    assert _snapshot(ws) == before


def test_a_protected_autocode_folder_is_exit_2(tmp_path: Path) -> None:
    if not ROOT or shutil.which("chattr") is None:
        pytest.skip("chattr needs root")
    ws = _workspace(tmp_path / "ws")
    if subprocess.run(["chattr", "+i", str(ws / ".autocode")], capture_output=True, check=False).returncode:
        pytest.skip("this file system has no immutable flag")
    try:
        before = _snapshot(ws)
        for args in (["prep"], ["forget"]):
            proc = autocode(*args, "--workspace", str(ws), env=cli_env())
            _no_traceback(proc)
            assert "Operation not permitted" in proc.stderr, proc.stderr
        assert _snapshot(ws) == before
    finally:
        subprocess.run(["chattr", "-i", str(ws / ".autocode")], check=False)


def _as_confined_root(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a user namespace: still root, but without power over files of unmapped owners."""
    import sys

    return subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, "-m", "autocode", *args],
        env=cli_env(), capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.fixture
def confined() -> None:
    if not ROOT or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("user namespaces are not available here")


def test_permission_denied_and_an_unreadable_file_are_exit_2(tmp_path: Path, confined: None) -> None:
    ws = _workspace(tmp_path / "ws")
    stranger = 12345  # a uid the namespace does not map: its files are out of reach there
    (ws / "secret.txt").write_text("not for you\n", encoding="utf-8")
    os.chown(ws / "secret.txt", stranger, stranger)
    os.chmod(ws / "secret.txt", 0)
    before = _snapshot(ws)
    proc = _as_confined_root("prep", "--workspace", str(ws), "--json")
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["kind"] == "unreadableFile" and error["path"] == "secret.txt"
    assert _snapshot(ws) == before

    os.unlink(ws / "secret.txt")
    os.chown(ws / ".autocode", stranger, stranger)
    before = _snapshot(ws)
    for args in (["prep"], ["forget"]):
        proc = _as_confined_root(*args, "--workspace", str(ws), "--json")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert json.loads(proc.stdout)["error"]["kind"] == "permissionDenied", proc.stdout
    assert _snapshot(ws) == before


def test_a_manifest_nested_past_the_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    deep = tmp_path / "deep.json"
    deep.write_text('{"inputs": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    before = _snapshot(ws)
    proc = autocode("prep", "--workspace", str(ws), "--manifest", str(deep), env=cli_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "levels deep, over the limit of 16" in proc.stderr
    assert _snapshot(ws) == before
    # Any other deep input (here an answers file) is an exit-2 error too, never a RecursionError.
    answers = tmp_path / "answers.json"
    answers.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    proc = autocode("task", "start", "--workspace", str(ws), "--brief", "Do it", "--answers", str(answers),
                    env=cli_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


def test_a_link_swapped_for_a_file_during_the_copy_is_changed_during_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_repo(tmp_path / "ws", {"a_target.txt": "t\n", "z_last.txt": "z\n"})
    os.symlink("a_target.txt", ws / "b_link")
    git(ws, "add", "b_link")
    git(ws, "commit", "-q", "-m", "a link")

    def swap(event: str, path: str) -> None:
        if event == "file" and path == "z_last.txt" and (ws / "b_link").is_symlink():
            os.unlink(ws / "b_link")
            (ws / "b_link").write_text("now a file\n", encoding="utf-8")

    monkeypatch.setattr(copier, "_test_hook", swap)
    with pytest.raises(AutoCodeError) as info:
        make_prep_copy(ws)
    assert info.value.kind == "changedDuringCopy" and info.value.exit_code == 2
    assert "run prep again" in info.value.message
    assert not (ws / ".autocode").exists()


def test_raced_swaps_never_end_in_a_traceback(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {f"f{i:03}.txt": f"{i}\n" * 50 for i in range(300)})
    for i in range(0, 300, 10):
        os.unlink(ws / f"f{i:03}.txt")
        os.symlink(f"f{i + 1:03}.txt", ws / f"f{i:03}.txt")
    stop = threading.Event()
    rng = random.Random(7)

    def flip() -> None:
        while not stop.is_set():
            name = ws / f"f{rng.randrange(0, 300, 10):03}.txt"
            try:
                if name.is_symlink():
                    tmp = name.with_suffix(".tmp")
                    tmp.write_text("file\n", encoding="utf-8")
                    os.replace(tmp, name)
                else:
                    tmp = name.with_suffix(".lnk")
                    os.symlink("f001.txt", tmp)
                    os.replace(tmp, name)
            except OSError:
                pass
            stop.wait(0.002)

    worker = threading.Thread(target=flip, daemon=True)
    worker.start()
    outcomes: list[str] = []
    try:
        for _ in range(15):
            try:
                make_prep_copy(ws)
                outcomes.append("ok")
            except AutoCodeError as exc:
                assert exc.exit_code == 2, exc
                outcomes.append(exc.kind)
    finally:
        stop.set()
        worker.join()
    assert set(outcomes) <= {"ok", "changedDuringCopy"}, outcomes
    assert "changedDuringCopy" in outcomes, outcomes
    prep = ws / ".autocode" / "prep"
    staging = [p for p in prep.iterdir() if p.is_dir() and not (p / "source").exists()] if prep.is_dir() else []
    assert staging == []


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (OSError(28, "No space left on device"), "noSpace"),
        (OSError(30, "Read-only file system", "/ws/.autocode"), "readOnly"),
        (PermissionError(13, "Permission denied", "/ws/.autocode"), "permissionDenied"),
        (RecursionError("maximum recursion depth exceeded"), "tooDeep"),
    ],
)
def test_a_fault_over_lsp_is_a_typed_error(error: BaseException, kind: str) -> None:
    import asyncio

    from pygls.exceptions import JsonRpcException

    from autocode_lsp.errors import engine_call

    def fails() -> None:
        raise error

    with pytest.raises(JsonRpcException) as info:
        asyncio.run(engine_call(fails))
    data = info.value.data
    assert isinstance(data, dict) and data["kind"] == kind
    assert "Remedy" in data["message"] if kind != "tooDeep" else "flatten it" in data["message"]
