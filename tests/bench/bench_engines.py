"""Benchmark: what an engine run adds around the agent CLI itself.

For each engine installed by `make engines` (Claude Code, Codex, Aider), each round runs, back to
back on the same scripted model on 127.0.0.1 (tests/support/engine_model.py):
- the anchor: the CLI alone, started directly in a plain folder with the very command line
  and environment its adapter builds, timed from start to exit (and to its first output);
- the engine run: `EngineProvider.implement` on a prep-copy-shaped folder (the version check
  from its cache, the copy's files captured, the CLI in bubblewrap, its output parsed and
  saved, the change read back as a diff), timed from the call to the diff it returns (what
  the proof gets).
Figures: the ratio of the two (median of per-round ratios; goal <= 1.2x), and the two pieces
of the engine run outside the CLI: start to the CLI's first output, and its last output to the
returned diff, each less the CLI's own time for that stretch when it runs alone (its start-up
before it prints, its shut-down after its last line).
Run: python tests/bench/bench_engines.py [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests"))

from autocode.providers import ProviderConfig  # noqa: E402
from autocode.providers.base import Plan, ProviderContext  # noqa: E402
from autocode.providers.engines.base import Job  # noqa: E402
from autocode.providers.engines.catalog import engine_settings  # noqa: E402
from autocode.providers.engines.instructions import instructions  # noqa: E402
from autocode.providers.engines.runner import EngineProvider  # noqa: E402
from support.engine_model import Fix, serve  # noqa: E402

BIN = {"claude-code": ROOT / ".tools" / "npm" / "node_modules" / ".bin",
       "codex": ROOT / ".tools" / "npm" / "node_modules" / ".bin",
       "aider": ROOT / ".tools" / "aider" / "bin"}
SPEC = {"claude-code": "autocode.providers.engines.claude_code:ClaudeCode",
        "codex": "autocode.providers.engines.codex:Codex",
        "aider": "autocode.providers.engines.aider:Aider"}
PROGRAM = {"claude-code": "claude", "codex": "codex", "aider": "aider"}
MODEL = {"claude-code": "claude-sonnet-4-5", "codex": "scripted", "aider": "scripted"}
BUGGY = "def add(a, b):\n    return a - b\n"
KEY = "sk-bench-" + "key" * 4
PLAN = Plan(summary="Fix add.", steps=["Make add return the sum."], citations=["calc/ops.py"])


def fresh(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "calc").mkdir(parents=True)
    (folder / "calc" / "__init__.py").write_text("")
    (folder / "calc" / "ops.py").write_text(BUGGY)
    (folder / ".gitignore").write_text("__pycache__/\n")


def alone(engine: str, url: str, folder: Path, ctx: ProviderContext) -> tuple[float, float, float]:
    """The CLI by itself: (seconds to its first output, from its last output to its exit, to its exit)."""
    provider = make_provider(engine, url)
    scratch = folder.parent / f"home-{engine}"
    scratch.mkdir(exist_ok=True)
    job = Job(prompt=instructions(ctx, PLAN), workdir=folder, scratch=scratch, model=MODEL[engine], base_url=url,
              key=KEY, files=("calc/ops.py",))
    provider.adapter.prepare(job)
    env = {"PATH": os.environ["PATH"], "HOME": str(scratch), **provider.adapter.env(job)}
    started = time.perf_counter()
    proc = subprocess.Popen(provider.adapter.argv(provider.settings.program, job), cwd=folder, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    first = last = None
    for _ in iter(proc.stdout.readline, b""):
        last = time.perf_counter() - started
        if first is None:
            first = last
    proc.wait()
    total = time.perf_counter() - started
    assert proc.returncode == 0, f"{engine} alone exited {proc.returncode}"
    assert "a + b" in (folder / "calc" / "ops.py").read_text(), f"{engine} alone made no edit"
    return first or total, total - (last or total), total


def make_provider(engine: str, url: str) -> EngineProvider:
    config = ProviderConfig(engine=engine, engine_model=MODEL[engine], engine_base_url=url,
                            engine_api_key_env="BENCH_ENGINE_KEY", time_budget=600, engine_idle_timeout=120)
    return EngineProvider(engine_settings(engine, SPEC[engine], config, "implementer"))


def context(workspace: Path, copy: Path, run_dir: Path) -> ProviderContext:
    return ProviderContext(task_id=run_dir.name, brief="add(2, 3) gives -1; make add return the sum.",
                           workspace=workspace, copy=copy, citations=["calc/ops.py"], run_dir=run_dir,
                           cancelled=lambda: False)


def engine_run(engine: str, url: str, workspace: Path, n: int) -> tuple[float, dict[str, float]]:
    """One engine run: (seconds from the call to the returned diff, the runner's own timing)."""
    copy = workspace / ".autocode" / "prep" / f"p{n}" / "source"
    fresh(copy)
    run_dir = workspace / ".autocode" / "runs" / f"t-bench-{engine}-{n}"
    run_dir.mkdir(parents=True)
    (run_dir / "launch.json").write_text(json.dumps({"sandbox": {"enabled": True, "network": True}}))
    provider = make_provider(engine, url)
    started = time.perf_counter()
    done = provider.implement(context(workspace, copy, run_dir), PLAN)
    total = time.perf_counter() - started
    assert "a + b" in done.diff, f"{engine}: the engine run made no change"
    timing = json.loads((run_dir / "engine" / "timing.json").read_text())
    return total, timing


def bench(engine: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        fresh(workspace)
        plain = base / "plain"
        with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", workspace)) as model:
            # One run first, so the version check is cached as in every later task (it is per program).
            engine_run(engine, model.url, workspace, 0)
            ratios, before, after, totals, anchors = [], [], [], [], []
            for n in range(1, rounds + 1):
                fresh(plain)
                model.fix.workspace = plain
                first_alone, tail_alone, total_alone = alone(engine, model.url, plain, context(plain, plain, base / "unused"))
                model.fix.workspace = workspace
                total, timing = engine_run(engine, model.url, workspace, n)
                ratios.append(total / total_alone)
                totals.append(total)
                anchors.append(total_alone)
                before.append(timing["to_first_output"] - first_alone)
                last_output = timing["before_cli"] + timing["cli_seconds"] - timing["after_last_output"]
                after.append(total - last_output - tail_alone)
    med = statistics.median
    print(f"{engine}: engine run {med(totals):.3f} s vs the CLI alone {med(anchors):.3f} s "
          f"(median of {rounds}; fastest {min(totals):.3f} / {min(anchors):.3f})")
    print(f"  ratio {med(ratios):.3f}x (goal <= 1.2x)")
    print(f"  added before the CLI's first output: {med(before) * 1000:.0f} ms; "
          f"from its last output to the diff: {med(after) * 1000:.0f} ms "
          "(each less the CLI's own time for the same stretch when alone)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ["BENCH_ENGINE_KEY"] = KEY
    ran = 0
    for engine, folder in BIN.items():
        if not (folder / PROGRAM[engine]).exists():
            print(f"{engine}: skipped, not installed (make engines)")
            continue
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
        bench(engine, args.rounds)
        ran += 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
