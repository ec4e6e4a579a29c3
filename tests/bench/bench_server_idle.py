"""Idle CPU of a language server session: a stdio `autocode-lsp` whose client opted in to
`autocode/task/didChange`, with a few tasks waiting in its workspace, left alone. While connected
the session notices task changes made by other processes with inotify (`runwatch.py`: nothing runs
while nothing changes); `AUTOCODE_LSP_TASK_WATCH=scan` measures the fallback, a stat of every
run's state.json once a second.

Run: python tests/bench/bench_server_idle.py [--tasks N] [--seconds S]
(needs the engine and server importable, as for the server tests)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "server")]

from test_server_tasks_flow import BRIEF, TEST_COMMAND, build_repo  # noqa: E402

from autocode_lsp import protocol  # noqa: E402
from support.lsp import close, connect, initialize  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wakeups(pid: int) -> int:
    """Times the process's threads gave up the CPU to wait (each wait that ended is a wake-up)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in status.splitlines() if line.startswith("voluntary_ctxt_switches"))
    return total


async def measure(root: Path, tasks: int, seconds: float) -> None:
    repo = build_repo(root / "project")
    session = await connect("stdio", log_file=root / "lsp.log")
    try:
        await initialize(session, preset="neovim", folders=[repo],
                         opt_in={"askQuestion": False, "reviewPlan": False})
        for _ in range(tasks):
            await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await asyncio.sleep(5)  # let the starts settle
        assert session.process is not None
        pid = session.process.pid
        cpu0, woke0, t0 = cpu_seconds(pid), wakeups(pid), time.monotonic()
        await asyncio.sleep(seconds)
        cpu1, woke1, t1 = cpu_seconds(pid), wakeups(pid), time.monotonic()
        used = cpu1 - cpu0
        print(f"{tasks} waiting tasks, idle {t1 - t0:.0f} s: {used:.2f} s CPU "
              f"({100 * used / (t1 - t0):.2f}% of one core), {woke1 - woke0} wake-ups")
    finally:
        await close(session)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="autocode-idle-") as tmp:
        asyncio.run(measure(Path(tmp), args.tasks, args.seconds))


if __name__ == "__main__":
    main()
