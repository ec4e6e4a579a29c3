"""How soon a language server session hears of a task change made by another process: the real
`autocode` CLI starts a task (it runs until its question) and then cancels it, round after round,
while a stdio `autocode-lsp` session that opted in to `autocode/task/didChange` has the workspace
open. Each latency ends at the arrival of the `didChange` that carries the CLI's last revision, and
starts at one of two points: the mtime of the run's `state.json` after the CLI exited (the engine
wrote it; its fsync and rename follow), or the moment the rename was seen by an inotify watch of
the bench's own (the change visible to any process). A first round, whose reading waits for the
server's warm-up import of the engine, is reported apart.

Both ways of noticing are measured, interleaved: inotify (`runwatch.py`, the default) and the look
once a second it replaced (`AUTOCODE_LSP_TASK_WATCH=scan`, the anchor). The goal: p95 under 200 ms.

Run: python tests/bench/bench_task_notice.py [--rounds N]
(needs the engine and server importable, as for the server tests)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "server")]

from lsprotocol import types  # noqa: E402

from autocode_lsp import inotify  # noqa: E402
from support.lsp import Session, child_env, close, connect, initialize  # noqa: E402
from support.tasks import autocode, build_sample  # noqa: E402

GOAL_MS = 200.0


class Stamped(list[dict[str, Any]]):
    """The session's didChange list, each arrival's wall-clock time kept beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.at: dict[tuple[str, int], int] = {}

    def append(self, item: dict[str, Any]) -> None:
        self.at.setdefault((item["task"]["id"], item["revision"]), time.time_ns())
        super().append(item)


class Renames:
    """When each run's state.json was last renamed into place, as an inotify watch of this process sees it."""

    def __init__(self, runs: Path) -> None:
        self.runs = runs
        self.at: dict[str, int] = {}
        self._ino = inotify.Inotify()
        self._where: dict[int, str] = {}
        self._ino.add(runs, inotify.CREATE | inotify.ONLYDIR)
        asyncio.get_running_loop().add_reader(self._ino.fileno(), self._read)

    def _read(self) -> None:
        now = time.time_ns()
        for event in self._ino.read():
            if event.wd in self._where and event.name == "state.json":
                self.at[self._where[event.wd]] = now
            elif event.mask & inotify.ISDIR and event.wd not in self._where:
                self._where[self._ino.add(self.runs / event.name, inotify.MOVED_TO | inotify.ONLYDIR)] = event.name

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self._ino.fileno())
        self._ino.close()


async def open_session(root: Path, repo: Path, watch: str) -> Session:
    env = child_env()
    env.pop("AUTOCODE_LSP_TASK_WATCH", None)
    if watch == "scan":
        env["AUTOCODE_LSP_TASK_WATCH"] = "scan"
    session = await connect("stdio", log_file=root / f"lsp-{watch}.log", env=env)
    session.did_change = Stamped()
    session.client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lambda ls, params: None)
    await initialize(session, preset="vscode", folders=[repo], opt_in={"askQuestion": False, "reviewPlan": False})
    return session


async def cli(*args: str) -> dict[str, Any]:
    proc = await asyncio.to_thread(autocode, "task", *args, "--json")
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


async def arrival(session: Session, snap: dict[str, Any]) -> int:
    """When the didChange carrying `snap`'s revision arrived (ns since the epoch)."""
    arrived = session.did_change
    assert isinstance(arrived, Stamped)
    key = (snap["id"], snap["revision"])
    for _ in range(3000):  # 30 s at most
        if key in arrived.at:
            return arrived.at[key]
        await asyncio.sleep(0.01)
    raise TimeoutError(f"no didChange for {key}")


def committed(snap: dict[str, Any]) -> int:
    return (Path(snap["runDir"]) / "state.json").stat().st_mtime_ns


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(root: Path, rounds: int) -> None:
    ways = ("inotify", "scan")
    since_mtime: dict[str, list[float]] = {w: [] for w in ways}
    since_rename: dict[str, list[float]] = {w: [] for w in ways}
    first: dict[str, float] = {}
    repos = {watch: build_sample("unittest", root / watch / "textkit") for watch in ways}
    sessions = {watch: await open_session(root, repos[watch][0], watch) for watch in ways}
    renames: dict[str, Renames] = {}
    try:
        for n in range(rounds + 1):
            for watch, session in sessions.items():
                repo, patch = repos[watch]
                started = await cli("start", "--workspace", str(repo), "--brief", f"Add longest_word via {patch} ({n})")
                if n == 0:  # the first task made .autocode/runs: watched by the bench from now on
                    first[watch] = (await arrival(session, started) - committed(started)) / 1e6
                    renames[watch] = Renames(repo / ".autocode" / "runs")
                    await cli("cancel", started["id"], "--workspace", str(repo))
                    continue
                snap = started
                for step in range(2):
                    if step:  # then the CLI cancels it
                        snap = await cli("cancel", started["id"], "--workspace", str(repo))
                    came = await arrival(session, snap)
                    since_mtime[watch].append((came - committed(snap)) / 1e6)
                    if snap["id"] in renames[watch].at:
                        since_rename[watch].append((came - renames[watch].at[snap["id"]]) / 1e6)
    finally:
        for watcher in renames.values():
            watcher.close()
        for session in sessions.values():
            await close(session)
    print(f"latency from a CLI commit to the session's didChange, {2 * rounds} changes each "
          f"(goal: p95 < {GOAL_MS:.0f} ms)")
    for watch in ways:
        for start, values in (("state.json mtime", since_mtime[watch]), ("rename seen", since_rename[watch])):
            if values:
                print(f"  {watch:8} from {start:16} p50 {statistics.median(values):7.1f} ms  "
                      f"p95 {pct(values, 0.95):7.1f} ms  max {max(values):7.1f} ms  (n={len(values)})")
        print(f"  {watch:8} first change of the session (waits for the engine's warm-up): {first[watch]:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="autocode-notice-") as tmp:
        asyncio.run(measure(Path(tmp), args.rounds))


if __name__ == "__main__":
    main()
