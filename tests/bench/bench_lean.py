"""Lean server benchmark: memory and time of the first commands, against the server just after `initialize`.

Every case starts a new `autocode-lsp` over stdio on a fresh memory store and
measures, from the client, the first command's round trip and the server's
resident memory (VmRSS) before and after it:

- the first memory command on an empty store (save, search), goal: within 150 ms;
- the first search on a store with memories (the embedding model is loaded
  to compare), goal: RSS at most 120 MB afterwards;
- the cold first command of any kind (doctor, task list, protocol info,
  memory list), goal: within 300 ms on a warm disk.

The anchors are the same process's RSS and the round trip of
`autocode.protocol.info` measured right after `initialize`.

The start-up floor of docs/performance.md is a second measurement: in each
fresh server the first `memory.save` or `memory.search`, sent at once after
`initialized` (the warm-up still importing) or after the warm-up has finished,
divided by that same server's time from spawn to the `initialize` response
(floor: at most 0.5x, median of N). The disk is warm:
one server runs the whole sequence once before the measured runs (that also
builds the per-machine vocabulary index of the static model, see
docs/performance.md).

Run: python tests/bench/bench_lean.py [--runs N] [--only-floor]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from bench_server import make_repo, quiet_client  # noqa: E402
from lsprotocol import types  # noqa: E402

RSS_GOAL_MB = 120.0
EMPTY_GOAL_S = 0.150
COLD_GOAL_S = 0.300
MEMORIES = (
    "The test suite of this repository runs with unittest discovery from the tests folder.",
    "Database migrations are written as plain SQL files and reviewed by the data team.",
    "Release branches only take fixes that have a linked incident.",
)


def cpu_s(pid: int) -> float:
    """CPU time the process has used (user + system): a load-independent companion to wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def run_case(base: Path, repo: Path, case: str, seed: bool) -> dict[str, float]:
    """One fresh server: initialize, anchor, optional seeding in another server, then the first command."""
    store = base / f"store-{case}-{time.monotonic_ns()}"
    env = {**os.environ, "XDG_DATA_HOME": str(store), "XDG_STATE_HOME": str(base / "state"),
           "XDG_CONFIG_HOME": str(base / "config"), "HOME": str(base / "home"),
           "XDG_CACHE_HOME": str(base / "cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from their compiled cache
    command = [sys.executable, "-m", "autocode_lsp", "--log-file", str(base / "lsp.log")]
    if seed:
        await sequence(command, env, repo, [("autocode.memory.save", {"content": c}) for c in MEMORIES])
    return await first_command(command, env, repo, case)


async def sequence(command: list[str], env: dict[str, str], repo: Path, calls: list[tuple[str, Any]]) -> None:
    client = quiet_client()
    await client.start_io(*command, env=env)
    await initialize(client, repo)
    for name, args in calls:
        await execute(client, name, args)
    await stop(client)


async def initialize(client: Any, repo: Path) -> None:
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=os.getpid(),
        workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
    ))
    client.initialized(types.InitializedParams())


async def execute(client: Any, name: str, args: Any) -> Any:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=name, arguments=[args]))


async def stop(client: Any) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


CASES: dict[str, tuple[str, dict[str, Any], bool]] = {
    "protocol.info at once after initialized (answers beside the warm-up)": ("autocode.protocol.info", {}, False),
    "task.list at once after initialized (the warm-up still running)": ("autocode.task.list", {}, False),
    "memory.save on an empty store": ("autocode.memory.save", {"content": MEMORIES[0]}, False),
    "memory.search on an empty store": ("autocode.memory.search", {"query": "unittest"}, False),
    "memory.search with memories (model loaded)": ("autocode.memory.search", {"query": "how do tests run"}, True),
    "doctor": ("autocode.doctor", {}, False),
    "task.list": ("autocode.task.list", {}, False),
    "memory.list": ("autocode.memory.list", {}, False),
}


async def first_command(command: list[str], env: dict[str, str], repo: Path, case: str) -> dict[str, float]:
    name, args, _seed = CASES[case]
    client = quiet_client()
    await client.start_io(*command, env=env)
    pid = client._server.pid
    await initialize(client, repo)
    anchor_rss = rss_mb(pid)
    at_once = "at once" in case
    if not at_once:
        await asyncio.sleep(float(os.environ.get("BENCH_SETTLE", "1.0")))  # a person's first command comes later than this; the warm-up has run
    floor = cpu_floor = 0.0
    if not at_once:
        started, cpu = time.perf_counter(), cpu_s(pid)
        await execute(client, "autocode.protocol.info", {})
        floor, cpu_floor = time.perf_counter() - started, cpu_s(pid) - cpu
    started, cpu = time.perf_counter(), cpu_s(pid)
    await execute(client, name, args)
    elapsed, cpu_used = time.perf_counter() - started, cpu_s(pid) - cpu
    after_rss = rss_mb(pid)
    if at_once:  # the anchor comes after: the same round trip once nothing is left to load
        started = time.perf_counter()
        await execute(client, "autocode.protocol.info", {})
        floor = time.perf_counter() - started
    await stop(client)
    return {"anchor_rss": anchor_rss, "rss": after_rss, "floor": floor, "time": elapsed,
            "cpu": cpu_used, "cpu_floor": cpu_floor}


INITIALIZE_FLOOR = 0.5
FLOOR_CASES: dict[str, tuple[str, dict[str, Any], bool]] = {
    "memory.save at once after initialized": ("autocode.memory.save", {"content": MEMORIES[0]}, True),
    "memory.search at once after initialized": ("autocode.memory.search", {"query": "unittest"}, True),
    "memory.save after the warm-up": ("autocode.memory.save", {"content": MEMORIES[0]}, False),
    "memory.search after the warm-up": ("autocode.memory.search", {"query": "unittest"}, False),
}


async def against_initialize(base: Path, repo: Path, case: str) -> tuple[float, float, float, float]:
    """One fresh server on an empty store: spawn to the `initialize` response and the first command,
    in wall time and in the server's CPU time (which a loaded machine does not stretch)."""
    name, args, at_once = FLOOR_CASES[case]
    store = base / f"store-floor-{time.monotonic_ns()}"
    env = {**os.environ, "XDG_DATA_HOME": str(store), "XDG_STATE_HOME": str(base / "state"),
           "XDG_CONFIG_HOME": str(base / "config"), "HOME": str(base / "home"),
           "XDG_CACHE_HOME": str(base / "cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    client = quiet_client()
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "autocode_lsp", "--log-file", str(base / "lsp.log"), env=env)
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=os.getpid(),
        workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
    ))
    to_initialize = time.perf_counter() - started
    pid = client._server.pid
    cpu_initialize = cpu_s(pid)
    client.initialized(types.InitializedParams())
    if not at_once:
        await asyncio.sleep(float(os.environ.get("BENCH_SETTLE", "1.0")))  # the warm-up has run
    started, cpu = time.perf_counter(), cpu_s(pid)
    await execute(client, name, args)
    first, cpu_first = time.perf_counter() - started, cpu_s(pid) - cpu
    await stop(client)
    return to_initialize, first, cpu_initialize, cpu_first


async def floor_against_initialize(base: Path, repo: Path, runs: int) -> int:
    missed = 0
    for case in FLOOR_CASES:
        results = [await against_initialize(base, repo, case) for _ in range(runs)]
        ratio = statistics.median(first / init for init, first, _, _ in results)
        cpu_ratio = statistics.median(cpu / cpu_init for _, _, cpu_init, cpu in results)
        init_ms = statistics.median(r[0] for r in results) * 1000
        first_ms = statistics.median(r[1] for r in results) * 1000
        ok = ratio <= INITIALIZE_FLOOR
        missed += not ok
        print(f"first {case}: {first_ms:.0f} ms, initialize {init_ms:.0f} ms: {ratio:.2f}x initialize "
              f"(floor {INITIALIZE_FLOOR}x {'ok' if ok else 'MISSED'}); server CPU {cpu_ratio:.2f}x "
              f"initialize's; median of {runs} per-server ratios")
    return missed


async def main_async(runs: int, only_floor: bool = False) -> int:
    failed = 0
    print(f"load average at the start: {load_average()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = make_repo(base / "project")
        if only_floor:
            await against_initialize(base, repo, next(iter(FLOOR_CASES)))  # warm the disk
            failed += await floor_against_initialize(base, repo, runs)
            print(f"load average at the end: {load_average()}")
            return 0
        for case in CASES:  # warm the disk and the per-machine index once
            await run_case(base, repo, case, CASES[case][2])
        for case, (_name, _args, seed) in CASES.items():
            results = [await run_case(base, repo, case, seed) for _ in range(runs)]
            med = {k: statistics.median(r[k] for r in results) for k in results[0]}
            goal = EMPTY_GOAL_S if "empty store" in case else COLD_GOAL_S
            time_ok = med["time"] <= goal or "model loaded" in case
            rss_ok = med["rss"] <= RSS_GOAL_MB
            failed += (not time_ok) + (not rss_ok)
            print(
                f"first {case}: {med['time'] * 1000:.0f} ms = {med['time'] / med['floor']:.1f}x protocol.info "
                f"(server CPU {med['cpu'] * 1000:.0f} ms) "
                f"(goal {goal * 1000:.0f} ms{'' if 'model loaded' in case else (' ok' if time_ok else ' MISSED')}); "
                f"RSS {med['anchor_rss']:.0f} -> {med['rss']:.0f} MB = {med['rss'] / med['anchor_rss']:.2f}x "
                f"after initialize (goal <= {RSS_GOAL_MB:.0f} MB {'ok' if rss_ok else 'MISSED'}); median of {runs}"
            )
        failed += await floor_against_initialize(base, repo, runs)
    print(f"load average at the end: {load_average()}")
    if failed:
        print(f"{failed} goal(s) missed in this run (a loaded machine misses the time goals; see docs/performance.md)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh servers per case (default 3)")
    parser.add_argument("--only-floor", action="store_true",
                        help="only the first memory commands against initialize (the start-up floor)")
    args = parser.parse_args()
    return asyncio.run(main_async(args.runs, args.only_floor))


if __name__ == "__main__":
    sys.exit(main())
