"""Benchmark: what one `approve_completion` of a one-file change costs in commits, reads, writes and git.

A real task (the fixture provider, a real git repository) is run to its completion
approval; then the one call is measured as the language server makes it (`TaskRun.load`
with an `on_change` callback, then `approve_completion`) while counters wrap, in this
process only:

- commits: atomic writes of `state.json`;
- reads of `state.json` (through `autocode.tasks.store.read_json`, which `TaskState.read` uses);
- atomic writes: every `autocode.atomic.write_atomically`, whatever the file;
- git processes: every process started whose program is `git` (all of them go through
  `autocode.gitsafe`; counted at `subprocess.Popen`, so `git config` lookups count too);
- wall time of the call (median of the rounds).

The counts do not vary between rounds; the time does. Run:
python tests/bench/bench_approve_completion.py [--rounds N]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests"))

from support import GREET_SOURCES, git, make_repo  # noqa: E402


def one_file_repo(root: Path) -> Path:
    """A repository with a committed patch that changes greet.py only."""
    repo = make_repo(root / "greet", GREET_SOURCES)
    (repo / "greet.py").write_text("def greet():\n    return 'hello there'\n")
    (repo / "one.patch").write_text(git(repo, "diff", "HEAD"))
    git(repo, "checkout", "--", "greet.py")
    git(repo, "add", "one.patch")
    git(repo, "commit", "-qm", "a one-file patch")
    return repo


class Counts:
    def __init__(self) -> None:
        self.writes: collections.Counter[str] = collections.Counter()
        self.reads: collections.Counter[str] = collections.Counter()
        self.git: collections.Counter[str] = collections.Counter()

    def row(self) -> dict[str, Any]:
        return {
            "commits of state.json": self.writes["state.json"],
            "reads of state.json": self.reads["state.json"],
            "atomic writes": sum(self.writes.values()),
            "git processes": sum(self.git.values()),
        }


@contextmanager
def counting(counts: Counts) -> Iterator[None]:
    """Wrap the write, the read and process start-up for the block (this benchmark only)."""
    import autocode.atomic
    from autocode.tasks import store

    real_write = autocode.atomic.write_atomically
    real_read = store.read_json
    real_popen = subprocess.Popen

    def write(path: Path, data: bytes, **kw: Any) -> None:
        counts.writes[Path(path).name] += 1
        real_write(path, data, **kw)

    def read(path: Path) -> Any:
        counts.reads[Path(path).name] += 1
        return real_read(path)

    class Popen(real_popen):  # type: ignore[misc,valid-type]
        def __init__(self, args: Any, *a: Any, **kw: Any) -> None:
            argv = [args] if isinstance(args, (str, bytes)) else list(args)
            if argv and os.path.basename(str(argv[0])) == "git":
                sub = next((str(x) for x in argv[1:] if not str(x).startswith("-") and "=" not in str(x)), "?")
                counts.git[sub] += 1
            super().__init__(args, *a, **kw)

    # Every module that imported the write by name gets the wrapper too.
    patched: list[tuple[Any, str, Callable[..., Any]]] = []
    for module in list(sys.modules.values()):
        if getattr(module, "write_atomically", None) is real_write:
            patched.append((module, "write_atomically", real_write))
            module.write_atomically = write
    patched.append((store, "read_json", real_read))
    store.read_json = read
    patched.append((subprocess, "Popen", real_popen))
    subprocess.Popen = Popen  # type: ignore[misc]
    try:
        yield
    finally:
        for module, name, value in patched:
            setattr(module, name, value)


def one_round(scratch: Path, index: int) -> tuple[Counts, float]:
    from autocode.tasks import Source, TaskOptions, TaskRun

    repo = one_file_repo(scratch / f"round{index}")
    run = TaskRun.start(repo, "via one.patch", TaskOptions(scenario="no-questions"))
    snap = run.approve_plan(1, Source("cli", "bench")).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap
    confirm = snap["needs"].get("confirmation")
    counts = Counts()
    seen: list[int] = []
    with counting(counts):
        began = time.perf_counter()
        # As the language server runs it: the task loaded for the call, a callback for each change.
        face = TaskRun.load(repo, run.id, on_change=lambda s: seen.append(s.revision))
        done = face.approve_completion(Source("cli", "bench"), confirm=confirm).wire()
        seconds = time.perf_counter() - began
    assert done["state"] == "COMPLETED" and done["result"]["apply"]["written"] == ["greet.py"], done
    return counts, seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    scratch = Path(tempfile.mkdtemp(prefix="autocode-bench-approve-", dir=shm))
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")  # never touch this machine's memory store
    os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")
    import shutil

    try:
        one_round(scratch, 0)  # warm-up: imports and the page cache are not measured
        rounds = [one_round(scratch, i + 1) for i in range(args.rounds)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts = rounds[0][0]
    for other, _ in rounds[1:]:
        if other.row() != counts.row():
            print(f"note: counts varied between rounds: {other.row()}")
    times = sorted(seconds for _, seconds in rounds)
    print(f"one approve_completion of one file ({args.rounds} rounds, load {os.getloadavg()[0]:.1f}):")
    for name, value in counts.row().items():
        print(f"  {name:24} {value}")
    print(f"  {'wall time (median)':24} {statistics.median(times) * 1000:.1f} ms "
          f"(min {times[0] * 1000:.1f}, max {times[-1] * 1000:.1f})")
    print(f"  files written: {dict(counts.writes)}")
    print(f"  git commands:  {dict(counts.git)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
