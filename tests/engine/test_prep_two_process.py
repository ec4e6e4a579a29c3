"""A large workspace is listed and copied by two processes: the same copy, the same checks, clean failures.

The split normally starts at a few thousand tracked files on two or more
cores; these tests lower that threshold so small real repositories take the
same path (a real second `python -I -S` process, real files).
"""

from __future__ import annotations

import ast
import os
import signal
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from autocode.errors import SetupError
from autocode.prep import Entry, PrepResult, copier, inventory, make_prep_copy, perfile
from support import git, make_repo, write_files
from support.audit import check_events, only_inside

SplitLog = list[subprocess.Popen[bytes]]


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Relative path -> (content or link text or "/", permission bits) of everything below `root`."""
    out: dict[str, tuple[str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("->" + os.readlink(path), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("/", 0)
            else:
                out[rel] = (Path(path).read_bytes().decode("utf-8", "replace"), stat.S_IMODE(st.st_mode))
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 tracked files in seven folders, plus the kinds of content that need care."""
    base = tmp_path_factory.mktemp("two")
    sub = make_repo(base / "subsrc", {"lib.py": "lib\n"})
    ws = make_repo(
        base / "ws",
        {
            **{f"d{i % 7}/f{i}.txt": f"{i}\n" * (i % 5) for i in range(600)},
            "bin/run.sh": "#!/bin/sh\n",
            "z/empty.txt": b"",
            "z/new\nline.txt": "odd\n",
            "z/-rf": "odd\n",
            ".gitignore": "*.log\nbuild/\n",
        },
        commit=False,
    )
    (ws / "z" / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"latin-1 name\n")
    os.chmod(ws / "bin" / "run.sh", 0o755)
    git(ws, "add", "-A")
    git(ws, "submodule", "add", "-q", str(sub), "libs/sub")
    git(ws, "commit", "-q", "-m", "initial")
    write_files(ws, {"z/untracked.py": "u\n", "z/debug.log": "ignored\n", "build/out.o": "ignored\n"})
    (ws / "d6" / "f6.txt").write_text("dirty\n")
    (ws / "d3" / "f3.txt").unlink()
    (ws / "d5" / "f5.txt").unlink()
    os.mkfifo(ws / "d5" / "f5.txt")  # was tracked; a FIFO now (never opened, never hangs)
    make_repo(ws / "z" / "nested", {"tool.py": "tool\n"})  # an untracked repository of its own
    os.symlink("../d1/f1.txt", ws / "z" / "link.txt")
    os.symlink("/etc/passwd", ws / "z" / "outside")
    return ws


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> SplitLog:
    """Force the two-process path; the list collects each second process started."""
    monkeypatch.setattr(copier, "SPLIT_MIN_ENTRIES", 4)
    monkeypatch.setattr(copier, "_spare_cpu", lambda: True)
    started: SplitLog = []
    original = copier.Copying._spawn

    def spawn(self: copier.Copying, root_fd: int) -> None:
        original(self, root_fd)
        if self.proc is not None:
            started.append(self.proc)

    monkeypatch.setattr(copier.Copying, "_spawn", spawn)
    return started


def stop_second_process_at_start(monkeypatch: pytest.MonkeyPatch, started: SplitLog) -> None:
    """SIGSTOP each second process as soon as it exists, so a test decides when it runs."""
    spawn = copier.Copying._spawn

    def stopped(self: copier.Copying, root_fd: int) -> None:
        spawn(self, root_fd)
        os.kill(started[-1].pid, signal.SIGSTOP)

    monkeypatch.setattr(copier.Copying, "_spawn", stopped)


def prep_ids(ws: Path) -> list[str]:
    prep = ws / ".autocode" / "prep"
    return sorted(p.name for p in prep.iterdir() if p.name != ".gitignore") if prep.exists() else []


def test_entry_fields_match_the_per_file_code() -> None:
    # perfile reads entries by position (the second process gets plain tuples).
    fields = Entry._fields
    for name, index in (("path", perfile.PATH), ("kind", perfile.KIND), ("dev", perfile.DEV),
                        ("ino", perfile.INO), ("size", perfile.SIZE), ("mtime_ns", perfile.MTIME),
                        ("ctime_ns", perfile.CTIME), ("mode", perfile.MODE)):
        assert fields[index] == name


def test_two_processes_make_the_same_copy(big: Path, split: SplitLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copier, "SPLIT_MIN_ENTRIES", 10**9)
    one = make_prep_copy(big)
    assert split == []
    monkeypatch.setattr(copier, "SPLIT_MIN_ENTRIES", 4)
    calls: list[tuple[int, int]] = []
    two = make_prep_copy(big, progress=lambda done, total: calls.append((done, total)))
    assert len(split) == 1 and split[0].returncode == 0
    assert tree(two.copy) == tree(one.copy)
    assert tree(two.copy)["bin/run.sh"][1] == 0o755
    assert tree(two.copy)["z/link.txt"] == ("->../d1/f1.txt", 0)
    assert "z/outside" not in tree(two.copy) and "z/debug.log" not in tree(two.copy)
    assert tree(two.copy)[os.fsdecode(b"z/caf\xe9.bin")][0] == "latin-1 name\n"
    assert "z/new\nline.txt" in tree(two.copy) and "d5/f5.txt" not in tree(two.copy)
    assert two.counts["excluded"]["specialFile"] == 1
    assert two.counts == one.counts
    assert one.inventory is not None and two.inventory is not None
    assert two.inventory.entries == one.inventory.entries
    assert sorted(two.inventory.components) == sorted(one.inventory.components) == ["libs/sub", "z/nested"]
    # Progress counts both processes' work, never goes back, and ends at its total.
    dones = [done for done, _ in calls]
    assert dones == sorted(dones) and calls[-1][0] == calls[-1][1] >= 600


def test_standalone_inventory_stays_in_one_process(big: Path, split: SplitLog) -> None:
    inv = inventory(big)
    assert split == [] and len([e for e in inv.entries if e.kind == "file"]) > 600


def test_second_process_that_never_starts_leaves_its_share_to_this_one(
    big: Path, split: SplitLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(copier, "SPLIT_MIN_ENTRIES", 10**9)
    one = make_prep_copy(big)
    monkeypatch.setattr(copier, "SPLIT_MIN_ENTRIES", 4)
    # It dies before saying it is ready (as when its code cannot be loaded): it touched nothing.
    monkeypatch.setattr(copier, "_BOOTSTRAP", "import sys; sys.exit(3)")
    calls: list[tuple[int, int]] = []
    two = make_prep_copy(big, progress=lambda done, total: calls.append((done, total)))
    assert len(split) == 1 and split[0].returncode == 3
    assert tree(two.copy) == tree(one.copy) and two.counts == one.counts
    assert calls[-1][0] == calls[-1][1] >= 600


def at_progress(action: Callable[[], None]) -> Callable[[int, int], None]:
    """A progress callback that runs `action` once, at the first report."""
    done: list[bool] = []

    def progress(_done: int, _total: int) -> None:
        if not done:
            done.append(True)
            action()

    return progress


def test_second_process_killed_while_this_one_copies(tmp_path: Path, split: SplitLog,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {f"d{i % 7}/f{i}.txt": f"{i}\n" for i in range(600)})
    spawn = copier.Copying._spawn

    def ready_then_stopped(self: copier.Copying, root_fd: int) -> None:
        # Once it said it is ready, its share is its own: this process must not redo it.
        spawn(self, root_fd)
        while not self.ready and split[-1].poll() is None:
            self._poll()
        os.kill(split[-1].pid, signal.SIGSTOP)

    monkeypatch.setattr(copier.Copying, "_spawn", ready_then_stopped)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws, progress=at_progress(lambda: split[-1].kill()))
    assert info.value.kind == "copyFailed" and "signal 9" in info.value.message
    # Nothing half-made stays: not the copy, not even the .autocode folder this prep made.
    assert not (ws / ".autocode").exists()
    assert split[-1].poll() is not None


def swap_staging(ws: Path, replacement: Callable[[Path], None], started: SplitLog) -> Callable[[], None]:
    def swap() -> None:
        (staging,) = (ws / ".autocode" / "prep").glob("*/.staging")
        staging.rename(staging.with_name("moved-aside"))
        replacement(staging)
        os.kill(started[-1].pid, signal.SIGCONT)

    return swap


def test_second_process_never_follows_a_planted_staging_link(tmp_path: Path, split: SplitLog,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {f"d{i % 7}/f{i}.txt": f"{i}\n" for i in range(600)})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stop_second_process_at_start(monkeypatch, split)
    plant = swap_staging(ws, lambda staging: staging.symlink_to(elsewhere), split)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws, progress=at_progress(plant))
    assert info.value.kind == "changedDuringCopy"
    assert ".staging' could no longer be opened as a folder" in info.value.message
    assert list(elsewhere.iterdir()) == []
    assert not (ws / ".autocode").exists()


def test_second_process_checks_it_writes_into_this_copy(tmp_path: Path, split: SplitLog,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {f"d{i % 7}/f{i}.txt": f"{i}\n" for i in range(600)})
    stop_second_process_at_start(monkeypatch, split)
    plant = swap_staging(ws, lambda staging: staging.mkdir(), split)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws, progress=at_progress(plant))
    assert info.value.kind == "changedDuringCopy"
    assert "is not the staging folder this copy made" in info.value.message
    assert not (ws / ".autocode").exists()


def test_no_interpreter_to_start_means_one_process(big: Path, split: SplitLog,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copier.sys, "executable", str(big / "no-such-python"))
    result = make_prep_copy(big)
    assert split == [] and result.counts["files"] > 600


def test_small_workspace_does_not_start_a_second_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copier, "_spare_cpu", lambda: True)
    started: list[int] = []
    monkeypatch.setattr(copier.Copying, "_spawn", lambda self, fd: started.append(fd))
    ws = make_repo(tmp_path / "ws", {f"f{i}.txt": "x\n" for i in range(50)})
    make_prep_copy(ws)
    assert started == []


def test_split_copy_from_a_worker_thread(big: Path, split: SplitLog) -> None:
    # The language server makes copies from a worker thread (asyncio.to_thread).
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(make_prep_copy(big)))
    worker.start()
    worker.join(120)
    assert len(split) == 1 and split[0].returncode == 0
    (result,) = results
    assert isinstance(result, PrepResult) and (result.copy / "bin" / "run.sh").read_text() == "#!/bin/sh\n"


# Prepended to the second process's start-up: record what it opens, write it out at exit.
_AUDITED = """\
import atexit, sys
_events = []
def _record(event, args):
    if event in ("open", "os.listdir", "os.scandir"):
        _events.append((event, args[0]))
sys.addaudithook(_record)
def _dump():
    data = repr(list(_events))
    with open(LOG, "w") as log:
        log.write(data)
atexit.register(_dump)
"""


def test_neither_process_opens_anything_outside_the_workspace(big: Path, split: SplitLog, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "second-process-opens"
    monkeypatch.setattr(copier, "_BOOTSTRAP", _AUDITED.replace("LOG", repr(str(log))) + copier._BOOTSTRAP)
    with only_inside(big):
        result = make_prep_copy(big)
    assert len(split) == 1 and split[0].returncode == 0
    assert (result.copy / "d6" / "f6.txt").read_text() == "dirty\n"
    opened = ast.literal_eval(log.read_text())
    # It did the work of its share (relative names through folder descriptors)...
    assert sum(1 for event, target in opened if event == "open" and isinstance(target, str)) > 200
    # ...and nothing it opened lies outside the workspace or the interpreter.
    check_events([(event, target, None) for event, target in opened], big)


def records(*items: tuple[str, str]) -> bytes:
    return b"".join(os.fsencode(f"{mode} {path}") + b"\0" for mode, path in items)


def test_listing_is_cut_in_two_never_between_stages_of_one_path() -> None:
    # A conflicted path has a record per stage, side by side: only one half may claim it.
    for before, after in ((1, 1), (2, 1), (2, 3), (0, 2), (3, 0)):
        items = [*[("100644", f"a/{i}.txt") for i in range(before)], *[("100644", "m/conflict.txt")] * 3,
                 *[("100644", f"z/{i}.txt") for i in range(after)]]
        raw = records(*items)
        first, second = perfile.split_records(raw)
        assert first + second == raw
        halves = [perfile.group_tracked(part) for part in (first, second)]
        claims = [part for part in halves if "conflict.txt" in part[0].get(("m",), [])]
        assert len(claims) == 1
        assert sum(part[1] for part in halves) == before + 1 + after
    assert perfile.split_records(b"") == (b"", b"")
    one = records(("100644", "only.txt"))
    assert perfile.split_records(one) == (one, b"")


def test_tracked_records_grouped_in_one_pass() -> None:
    raw = records(
        ("100644", ".autocode/project.json"), ("100644", "README.md"), ("160000", "libs/sub"),
        ("100644", "src/a.py"), ("100644", "src/a.py"), ("100755", "src/run.sh"),
        ("100644", os.fsdecode(b"caf\xe9.bin")), ("100644", "new\nline.txt"),
    )
    groups, count, gitlinks, own = perfile.group_tracked(raw)
    assert own == 1 and count == 6 and gitlinks == {"libs/sub"}
    assert groups[()] == ["README.md", os.fsdecode(b"caf\xe9.bin"), "new\nline.txt"]
    assert groups[("src",)] == ["a.py", "run.sh"] and groups[("libs",)] == ["sub"]
    # Inside a nested repository nothing is its workspace's own folder.
    nested, count, _, own = perfile.group_tracked(records(("100644", ".autocode/x")), "tools/nested/")
    assert own == 0 and count == 1 and nested == {("tools", "nested", ".autocode"): ["x"]}
