"""Benchmark: how a loop's requests grow, on a 2,000-file repository with a 5,000-line file.

A scripted OpenAI-compatible endpoint (real HTTP on 127.0.0.1, in this
process) answers 30 turns of the calls a model makes while finding its way
in a large repository: pages of the long file, searches, listings, reads
of other files, edits. The figure is the size of the request at turn 30
against the first request (the anchor), as characters sent; the goal is at
most 4x (before context management it was about 50x by turn 18). The
first request is the implementer's: its system message, the brief, the
repository map (providers.repomap) and the plan. Also
printed: the largest request, the tokens the budget counted over the loop,
and the engine's own time per turn. Run: python tests/bench/bench_context.py
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TURNS = 30
FILES = 2000
LONG_LINES = 5000


def _repo(root: Path) -> Path:
    for i in range(FILES):
        path = root / f"pkg{i % 40:02d}" / f"mod{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\n\ndef f{i}(x):\n    return x + {i}\n', encoding="utf-8")
    long = "".join(f"def handler_{n}(request):\n    return {{'id': {n}, 'ok': True}}  # a line of code\n\n" for n in range(LONG_LINES // 3))
    (root / "big.py").write_text(long, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=root, check=True, env=env)
    return root


def _script() -> list[dict[str, Any]]:
    cycle: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "big.py", "start_line": 1}),
        ("search", {"pattern": "def handler_1"}),
        ("list_files", {"path": "pkg01"}),
        ("read_file", {"path": "pkg02/mod0002.py"}),
        ("read_file", {"path": "big.py", "start_line": 2001}),
        ("edit_file", {"path": "pkg03/mod0003.py", "old_text": "return x + 3\n", "new_text": "return x + 3\n"}),
    ]
    steps = []
    for i in range(TURNS - 1):
        name, args = cycle[i % len(cycle)]
        if name == "read_file" and args["path"] == "big.py":
            args = {**args, "start_line": 1 + (i * 400) % (LONG_LINES - 400)}
        steps.append({"role": "assistant", "content": "Looking further.", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
    steps.append({"role": "assistant", "content": "done"})
    return steps


def main() -> int:
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    scratch = Path(tempfile.mkdtemp(prefix="autocode-bench-context-", dir=shm))
    os.environ["XDG_DATA_HOME"] = str(scratch / "data")
    os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")
    script = _script()
    sizes: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            sizes.append(len(raw))
            message = script[(len(sizes) - 1) % len(script)]
            # Usage as a tokenizer would count it: about 3.5 characters a token.
            prompt = len(raw) * 2 // 7
            body = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": prompt, "completion_tokens": 30, "total_tokens": prompt + 30}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        from autocode.prep import citations, make_prep_copy
        from autocode.providers.agent import session
        from autocode.providers.agent.families import RequestShape, family_of
        from autocode.providers.agent.http import ChatClient
        from autocode.providers.agent.loop import Budgets
        from autocode.providers.agent.session import IMPLEMENTER_SYSTEM
        from autocode.providers.base import ProviderContext
        from autocode.providers.openai import _context_text
        from autocode.providers.repomap import MAP_FILES
        from autocode.tasks.store import read_events

        repo = _repo(scratch / "repo")
        copy = make_prep_copy(repo).copy
        run_dir = scratch / "run"
        (run_dir / "evidence").mkdir(parents=True)
        ctx = ProviderContext(task_id="bench", brief="Make handler_1 return ok False for a missing id.", workspace=repo,
                              copy=copy, citations=["big.py"], run_dir=run_dir, say=lambda m: None, cancelled=lambda: False,
                              map_paths=citations(repo, limit=MAP_FILES))
        # The first message as the implementer's: the brief, the repository map, the plan.
        plan = {"summary": "Change handler_1.", "steps": ["Read big.py", "Edit handler_1", "Run the tests"], "citations": ["big.py"]}
        user = _context_text(ctx, mapped=["big.py"]) + "\n\nApproved plan:\n" + json.dumps(plan, indent=1)
        loop = session._loop(ChatClient(base_url=url), "bench", ctx, "implementer", "implementer",
                             tuple(t for t in session.ALL_TOOLS if t != "run_tests"), Budgets(max_turns=TURNS + 1),
                             "tools", session.Edits.open(copy, run_dir / "agent" / "originals.json"),
                             RequestShape(family_of("openai", url, "bench"), stream=False))
        started = time.perf_counter()
        result = loop.run(IMPLEMENTER_SYSTEM, user)
        wall = time.perf_counter() - started
        assert result.answered and len(sizes) == TURNS, (result.stopped, len(sizes))
        first, last = sizes[0], sizes[TURNS - 1]
        print(f"context: {TURNS} turns on {FILES} files and a {LONG_LINES}-line file; window {loop.sizing.window:,} tokens")
        print(f"  anchor  the first request                         {first:9,} bytes")
        print(f"  figure  the request at turn {TURNS}                   {last:9,} bytes  {last / first:5.2f}x  (goal <= 4x)")
        print(f"  figure  the largest request                       {max(sizes):9,} bytes  {max(sizes) / first:5.2f}x")
        print(f"  part    tokens counted over the loop               {result.usage.total_tokens:9,}  (token_budget 400,000)")
        tools = sum(float(e.get("seconds") or 0) for e in read_events(run_dir / "agent" / "implementer.jsonl")
                    if e.get("event") == "tool")
        print(f"  part    median request                            {statistics.median(sizes):9,.0f} bytes;"
              f" engine time {(loop.engine_seconds - tools) / TURNS * 1000:.2f} ms a turn without the tools"
              f" ({tools / TURNS * 1000:.1f} ms in them) of {wall / TURNS * 1000:.1f} ms")
        return 0 if last / first <= 4 else 1
    finally:
        server.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
