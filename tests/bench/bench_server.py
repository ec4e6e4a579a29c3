"""Language server benchmark: start-up and command round trips, as ratios to anchors of the same run.

- time to the `initialize` response of `autocode-lsp` against a bare pygls
  server started the same way (same interpreter, stdio); goal: at most 1.2x;
- round-trip p50/p95 of autocode.doctor, autocode.memory.search and
  autocode.task.get against autocode.protocol.info (the protocol floor);
- the token check's cost over TCP: connect + `initialize` to a listener that asks
  for a token against one started with --no-token (same process start-up, same
  machine load, interleaved), and the constant-time comparison on its own.

Run: python tests/bench/bench_server.py [--runs N] [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

BARE_SERVER = (
    "from pygls.lsp.server import LanguageServer\n"
    "LanguageServer('bare', '0').start_io()\n"
)


async def time_to_initialize(command: list[str], env: dict[str, str], folder: Path) -> float:
    client = quiet_client()
    started = time.perf_counter()
    await client.start_io(*command, env=env)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            process_id=os.getpid(),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
        )
    )
    elapsed = time.perf_counter() - started
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return elapsed


async def command(client: LanguageClient, name: str, args: dict[str, Any]) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=[args])
    )


async def round_trips(client: LanguageClient, name: str, args: dict[str, Any], calls: int) -> list[float]:
    await command(client, name, args)  # warm: first-use imports are not a round trip
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await command(client, name, args)
        times.append(time.perf_counter() - started)
    return times


def quiet_client() -> LanguageClient:
    client = LanguageClient("bench", "0")

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def _log(params: types.LogMessageParams) -> None:
        return None

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def _show(params: types.ShowMessageParams) -> None:
        return None

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def _ask(params: types.ShowMessageRequestParams) -> None:
        return None  # leave the task's question open: the benchmark only reads the task

    return client


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (root / "tests" / "test_ok.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n",
        encoding="utf-8",
    )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=root, env=env, check=True)
    return root


async def main_async(runs: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "HOME": str(base / "home"), "XDG_DATA_HOME": str(base / "data"),
               "XDG_STATE_HOME": str(base / "state"), "XDG_CONFIG_HOME": str(base / "config")}
        repo = make_repo(base / "project")
        ours = [sys.executable, "-m", "autocode_lsp", "--log-file", str(base / "lsp.log")]
        bare = [sys.executable, "-c", BARE_SERVER]

        bare_times, our_times = [], []
        for _ in range(runs):  # interleaved so both see the same machine load
            bare_times.append(await time_to_initialize(bare, env, repo))
            our_times.append(await time_to_initialize(ours, env, repo))
        bare_med, our_med = statistics.median(bare_times), statistics.median(our_times)
        print(f"initialize: autocode-lsp {our_med * 1000:.0f} ms vs bare pygls {bare_med * 1000:.0f} ms "
              f"(median of {runs}) = {our_med / bare_med:.2f}x (goal <= 1.2x)")

        client = quiet_client()
        await client.start_io(*ours, env=env)
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), process_id=os.getpid(),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
        ))
        client.initialized(types.InitializedParams())
        setup: dict[str, str] = {}
        try:
            await command(client, "autocode.memory.save",
                          {"content": "The test suite of this repository runs with unittest discovery."})
        except JsonRpcException as exc:
            setup["autocode.memory.search"] = exc.message
        task_args: dict[str, Any] = {}
        try:
            started = await command(client, "autocode.task.start", {
                "brief": "Benchmark task", "testCommand": "python3 -m unittest discover -s tests -t ."})
            task_args = {"taskId": started["id"] if isinstance(started, dict) else started.id}
        except JsonRpcException as exc:
            setup["autocode.task.get"] = exc.message

        floor = await round_trips(client, "autocode.protocol.info", {}, calls)
        floor50, floor95 = p(floor, 0.5), p(floor, 0.95)
        print(f"autocode.protocol.info (floor): p50 {floor50 * 1000:.2f} ms, p95 {floor95 * 1000:.2f} ms "
              f"({calls} calls)")
        for name, args in (
            ("autocode.doctor", {}),
            ("autocode.memory.search", {"query": "unittest discovery"}),
            ("autocode.task.get", task_args),
        ):
            if name in setup:
                print(f"{name}: not measured ({setup[name]})")
                continue
            try:
                times = await round_trips(client, name, args, calls)
            except JsonRpcException as exc:
                print(f"{name}: not measured ({exc.message})")
                continue
            print(f"{name}: p50 {p(times, 0.5) * 1000:.2f} ms = {p(times, 0.5) / floor50:.1f}x floor, "
                  f"p95 {p(times, 0.95) * 1000:.2f} ms = {p(times, 0.95) / floor95:.1f}x floor")
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        await token_cost(env, base, max(20, calls // 2))


async def _tcp_initialize(port: int, token: str | None) -> float:
    """Connect, send `initialize` (with the token when given), wait for its reply, close."""
    import json

    params: dict[str, Any] = {"processId": None, "capabilities": {}}
    if token is not None:
        params["initializationOptions"] = {"autocode": {"token": token}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    length = 0
    while True:
        line = await reader.readline()
        if line == b"\r\n":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    reply = json.loads(await reader.readexactly(length))
    elapsed = time.perf_counter() - started
    assert "result" in reply, reply
    writer.close()
    return elapsed


async def _listener(env: dict[str, str], log: Path, *flags: str) -> tuple[asyncio.subprocess.Process, int, str | None]:
    import re

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "autocode_lsp", "--log-file", str(log), "--tcp", "127.0.0.1:0", *flags,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=env,
    )
    assert process.stderr is not None
    while True:
        line = (await process.stderr.readline()).decode()
        if not line:
            raise RuntimeError("the listener exited before listening")
        match = re.search(r"listening on tcp \S+:(\d+) \((?:token file: (.+)|no token)\)", line)
        if match:
            token = Path(match.group(2)).read_text(encoding="utf-8").strip() if match.group(2) else None
            return process, int(match.group(1)), token


async def token_cost(env: dict[str, str], base: Path, rounds: int) -> None:
    import timeit

    from autocode_lsp.security import new_token, token_matches

    guarded, guarded_port, token = await _listener(env, base / "guarded.log")
    open_, open_port, _ = await _listener(env, base / "open.log", "--no-token")
    try:
        with_token, without = [], []
        for _ in range(3):  # warm both (first-use imports happen on the first initialize)
            await _tcp_initialize(guarded_port, token)
            await _tcp_initialize(open_port, None)
        for _ in range(rounds):
            with_token.append(await _tcp_initialize(guarded_port, token))
            without.append(await _tcp_initialize(open_port, None))
    finally:
        for process in (guarded, open_):
            process.terminate()
            await process.wait()
    a, b = statistics.median(with_token), statistics.median(without)
    print(f"tcp connect + initialize: with a token {a * 1000:.2f} ms vs --no-token {b * 1000:.2f} ms "
          f"(median of {rounds}) = {a / b:.2f}x")
    expected, given = new_token(), new_token()
    n = 100_000
    per_call = timeit.timeit(lambda: token_matches(expected, given), number=n) / n
    print(f"token comparison (hmac.compare_digest): {per_call * 1e6:.2f} us per check")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="server starts per kind (default 7)")
    parser.add_argument("--calls", type=int, default=100, help="round trips per command (default 100)")
    args = parser.parse_args()
    asyncio.run(main_async(args.runs, args.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
