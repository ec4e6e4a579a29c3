"""An atomic write that fails (a full disk, a size limit) leaves no temporary file (issue 31).

The failure is real: the writer runs in a child process whose file-size limit
(RLIMIT_FSIZE) is below what it writes, so the kernel refuses the write with EFBIG
exactly as a full disk refuses one with ENOSPC.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WRITER = r"""
import json, resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a refused write raises instead of killing
which, target = sys.argv[1], Path(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
big = {"text": "x" * 100_000}
try:
    if which == "tasks":
        from autocode.tasks.store import write_json_atomic
        write_json_atomic(target, big)
    elif which == "atomic":
        from autocode.atomic import write_atomically
        write_atomically(target, json.dumps(big).encode())
    elif which == "token":
        from autocode_lsp.security import write_private
        write_private(target, json.dumps(big))
    elif which == "report":
        from autocode.prep.core import write_report
        class Result:
            def to_dict(self):
                return big
        write_report(Result(), target)
except OSError as exc:
    print(json.dumps({"errno": exc.errno}))
    sys.exit(0)
print(json.dumps({"errno": None}))
"""


@pytest.mark.parametrize("which", ["tasks", "atomic", "token", "report"])
def test_a_write_refused_by_the_kernel_leaves_the_old_file_and_no_temporary_one(which: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    target = folder / ".state.json"
    target.write_text('{"old": true}\n', encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", WRITER, which, str(target)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["errno"] == 27, out.stdout  # EFBIG: the write was refused
    assert target.read_text(encoding="utf-8") == '{"old": true}\n', "the old file was damaged"
    assert sorted(p.name for p in folder.iterdir()) == [".state.json"], "a temporary file was left"
