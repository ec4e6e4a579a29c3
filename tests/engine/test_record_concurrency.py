"""Concurrent completions merging into one record: nothing lost, a killed writer harms nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.atomic import TMP_SUFFIX
from autocode.record import Convention, ObservedFacts, load_record, merge_record

WRITERS = 8
MERGES = 100

WRITER = """
import sys
from autocode.record import Convention, ObservedFacts, merge_record
workspace, writer, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.stdin.readline()  # start together
for i in range(count if count > 0 else 10**9):
    # A generous lock timeout: on a loaded machine one writer may wait for all the others.
    result = merge_record(
        workspace, ObservedFacts(), [Convention(f"writer {writer} question {i}?", f"answer {i}")], lock_timeout=120
    )
    if result.errors or not result.written:
        print("FAILED", i, result.errors, flush=True)
        sys.exit(1)
print("done", flush=True)
"""


def _start_writer(workspace: Path, writer: int, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(workspace), str(writer), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def fast_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs when the machine has one: the test is about locking, and 1,600 fsyncs on a
    busy shared disk would make it slow without making it stricter."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="autocode-merge-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_eight_writers_lose_no_convention(fast_folder: Path) -> None:
    tmp_path = fast_folder
    merge_record(tmp_path, ObservedFacts(framework="pytest"), [Convention("kept from before?", "yes")])
    writers = [_start_writer(tmp_path, n, MERGES) for n in range(WRITERS)]
    for proc in writers:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in writers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (out, err)
    loaded = load_record(tmp_path)
    assert loaded.status == "valid", loaded.problems
    assert loaded.record is not None
    questions = {c.question for c in loaded.record.conventions}
    expected = {f"writer {w} question {i}?" for w in range(WRITERS) for i in range(MERGES)}
    assert expected <= questions
    assert "kept from before?" in questions
    assert len(loaded.record.conventions) == WRITERS * MERGES + 1
    assert loaded.record.framework == "pytest"


def test_sigkilled_writer_leaves_a_valid_record_and_no_blocking_lock(tmp_path: Path) -> None:
    record = tmp_path / ".autocode" / "project.json"
    for attempt in range(3):
        proc = _start_writer(tmp_path, attempt, 0)
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if len(json.loads(record.read_text())["conventions"]) >= 20 * (attempt + 1):
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL

        loaded = load_record(tmp_path)
        assert loaded.status == "valid", loaded.problems
        # A lock the killed writer still held would make this merge time out with an error.
        result = merge_record(tmp_path, ObservedFacts(), [Convention(f"after kill {attempt}?", "ok")], lock_timeout=5)
        assert result.errors == () and result.written
    # A writer killed between creating and renaming its temp file leaves it; the next merge clears it.
    assert [p.name for p in record.parent.iterdir() if p.name.endswith(TMP_SUFFIX)] == []
    final = load_record(tmp_path)
    assert final.record is not None
    assert {f"after kill {a}?" for a in range(3)} <= {c.question for c in final.record.conventions}
