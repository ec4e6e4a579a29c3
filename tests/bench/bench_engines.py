"""Benchmark: what an engine run adds around the agent CLI itself, up to the proof's verdict.

For each engine `make engines` installs (Claude Code, Codex, Aider, OpenCode, Gemini CLI), each
round runs, back to back on the same scripted model on 127.0.0.1 (tests/support/engine_model.py):
- the anchor: the CLI alone, started directly in a plain folder with the very command line
  and environment its adapter builds, timed from start to exit (and to its first output, and
  from its last output to its exit);
- the engine run: a real task (the fixture provider asks and plans, as in
  tests/engine/test_engines_e2e.py), timed from the plan's approval to the verdict: the version
  from its cache, the copy's files recorded, the CLI in bubblewrap with its output parsed and
  saved, the change read back as a diff, then the proof (the project's tests on the copy, before
  and after the change) and its verdict, as `approve_plan` returns it.
Each is run twice by default (`--latency 0,1`): with the model answering at once, where the CLI's
own time is least and what AutoCode adds weighs most, and with the model taking a second before
each answer, about a hosted model's time to its first token (the streams themselves stay instant).
Figures: the ratio of the two (median of per-round ratios; goal <= 1.2x), and the two stretches
outside the CLI: from the approval to the CLI's first output, and from its last output to the
verdict, each less the CLI's own time for that stretch when alone (its start-up before it prints,
its shut-down after its last line); the second is split into the engine's own work (to the diff)
and the proof.
Run: python tests/bench/bench_engines.py [--rounds R] [--engines a,b] [--json FILE]
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
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests"))

from autocode.providers import ProviderConfig  # noqa: E402
from autocode.providers.base import Plan, ProviderContext  # noqa: E402
from autocode.providers.engines.base import Job  # noqa: E402
from autocode.providers.engines.catalog import engine_settings  # noqa: E402
from autocode.providers.engines.instructions import instructions  # noqa: E402
from autocode.providers.engines.runner import EngineProvider  # noqa: E402
from autocode.tasks import Source, TaskOptions, TaskRun  # noqa: E402
from support.agent import BUGGY_OPS, TEST_COMMAND, build_calc  # noqa: E402
from support.engine_model import Fix, serve  # noqa: E402

NPM_BIN = ROOT / ".tools" / "npm" / "node_modules" / ".bin"
BIN = {"claude-code": NPM_BIN, "codex": NPM_BIN, "aider": ROOT / ".tools" / "aider" / "bin",
       "opencode": NPM_BIN, "gemini": NPM_BIN}
SPEC = {"claude-code": "autocode.providers.engines.claude_code:ClaudeCode",
        "codex": "autocode.providers.engines.codex:Codex",
        "aider": "autocode.providers.engines.aider:Aider",
        "opencode": "autocode.providers.engines.opencode:OpenCode",
        "gemini": "autocode.providers.engines.gemini:Gemini"}
PROGRAM = {"claude-code": "claude", "codex": "codex", "aider": "aider", "opencode": "opencode", "gemini": "gemini"}
MODEL = {"claude-code": "claude-sonnet-4-5", "codex": "scripted", "aider": "scripted", "opencode": "scripted",
         "gemini": "gemini-2.5-flash"}
KEY_VAR = "BENCH_ENGINE_KEY"
KEY = "sk-bench-" + "key" * 4
BRIEF = "add(2, 3) gives -1; make add return the sum."
PLAN = Plan(summary="Fix add.", steps=["Make add return the sum."], citations=["calc/ops.py"])
WHO = Source("cli", "bench")


def fresh(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "calc").mkdir(parents=True)
    (folder / "calc" / "__init__.py").write_text("")
    (folder / "calc" / "ops.py").write_text(BUGGY_OPS)
    (folder / ".gitignore").write_text("__pycache__/\n")


def make_provider(engine: str, url: str) -> EngineProvider:
    config = ProviderConfig(engine=engine, engine_model=MODEL[engine], engine_base_url=url,
                            engine_api_key_env=KEY_VAR, time_budget=600, engine_idle_timeout=120)
    return EngineProvider(engine_settings(engine, SPEC[engine], config, "implementer"))


def alone(engine: str, url: str, folder: Path) -> tuple[float, float, float]:
    """The CLI by itself: (seconds to its first output, from its last output to its exit, to its exit)."""
    provider = make_provider(engine, url)
    scratch = folder.parent / f"home-{engine}"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    ctx = ProviderContext(task_id="t-alone", brief=BRIEF, workspace=folder, copy=folder,
                          citations=["calc/ops.py"], run_dir=folder.parent / "unused", cancelled=lambda: False)
    job = Job(prompt=instructions(ctx, PLAN, TEST_COMMAND), workdir=folder, scratch=scratch, model=MODEL[engine],
              base_url=url, key=KEY, files=("calc/ops.py",))
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


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def task_run(engine: str, url: str, base: Path, n: int, model: Any) -> dict[str, float]:
    """One task with the engine as implementer, timed from the plan's approval to the verdict."""
    repo = build_calc(base / f"task-{n}")
    model.fix.workspace = repo
    run = TaskRun.start(repo, BRIEF, TaskOptions(test_command=TEST_COMMAND))
    snap = run.snapshot().wire()
    question = snap["needs"]["questions"][0]["id"]
    snap = run.answer(question, "Name tests after the behaviour they check.", WHO, how="typed").wire()
    assert snap["needs"]["kind"] == "approve_plan", snap
    wall = time.time()
    started = time.perf_counter()
    snap = run.approve_plan(1, WHO).wire()
    total = time.perf_counter() - started
    assert snap["needs"] and snap["needs"]["kind"] == "approve_completion", snap["error"]
    assert snap["needs"]["proof"]["status"] == "verified", snap["needs"]["proof"]
    # The engine's parsed lines are stamped as they are read (ms): its first and last output.
    said = _events(run.run_dir / "engine" / "events.jsonl")
    first, last = _at(said[0]["time"]), _at(said[-1]["time"])
    task = {e["event"]: _at(e["time"]) for e in _events(run.run_dir / "events.jsonl")}
    timing = json.loads((run.run_dir / "engine" / "timing.json").read_text())
    run.cancel()
    shutil.rmtree(repo, ignore_errors=True)
    return {"total": total, "first": first - wall, "last": last - wall, "implemented": task["implemented"] - wall,
            "verified": task["verified"] - wall, "end": total, "cli": timing["cli_seconds"]}


def bench(engine: str, rounds: int, latency: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        base = Path(tmp)
        plain = base / "plain"
        fresh(plain)
        with serve(Fix("calc/ops.py", "    return a - b", "    return a + b", plain), latency=latency) as model:
            config = base / "xdg-config" / "autocode"
            config.mkdir(parents=True)
            (config / "config.toml").write_text(
                f'engine = "{engine}"\nengine_model = "{MODEL[engine]}"\nengine_base_url = "{model.url}"\n'
                f'engine_api_key_env = "{KEY_VAR}"\nengine_idle_timeout = 150\n'
                'sandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]\n', encoding="utf-8")
            os.environ["XDG_CONFIG_HOME"] = str(base / "xdg-config")
            # One task first, so the version check is cached as in every later task (it is per program).
            task_run(engine, model.url, base, 0, model)
            rows: list[dict[str, float]] = []
            for n in range(1, rounds + 1):
                fresh(plain)
                model.fix.workspace = plain
                first_alone, tail_alone, total_alone = alone(engine, model.url, plain)
                got = task_run(engine, model.url, base, n, model)
                rows.append({
                    "ratio": got["total"] / total_alone, "total": got["total"], "alone": total_alone,
                    "diff_ratio": got["implemented"] / total_alone,
                    "before": got["first"] - first_alone,
                    "after": got["end"] - got["last"] - tail_alone,
                    "to_diff": got["implemented"] - got["last"] - tail_alone,
                    "proof": got["verified"] - got["implemented"],
                    "end_after_verdict": got["end"] - got["verified"],
                })
    med = statistics.median

    def m(key: str) -> float:
        return med(r[key] for r in rows)

    print(f"{engine}, model answering after {latency:g} s: engine run to the verdict {m('total'):.3f} s vs the CLI alone {m('alone'):.3f} s "
          f"(median of {rounds}; fastest {min(r['total'] for r in rows):.3f} / {min(r['alone'] for r in rows):.3f})")
    print(f"  ratio {m('ratio'):.3f}x (goal <= 1.2x); per round: "
          + ", ".join(f"{r['ratio']:.2f}" for r in rows)
          + f"; to the diff alone (before the proof): {m('diff_ratio'):.3f}x")
    print(f"  added from the approval to the CLI's first output: {m('before') * 1000:.0f} ms; "
          f"from its last output to the verdict: {m('after') * 1000:.0f} ms "
          f"(to the diff {m('to_diff') * 1000:.0f} ms, the proof {m('proof') * 1000:.0f} ms); "
          "each less the CLI's own time for the same stretch when alone", flush=True)
    return {"engine": engine, "latency": latency, "rounds": rows}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engines", default=",".join(BIN))
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    parser.add_argument("--latency", default="0,1",
                        help="seconds the scripted model waits before each answer, one bench per value "
                             "(0: at once, the CLI's own floor; 1: about a hosted model's first token)")
    args = parser.parse_args()
    results = []
    os.environ[KEY_VAR] = KEY
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    for engine in args.engines.split(","):
        folder = BIN[engine]
        if not (folder / PROGRAM[engine]).exists():
            print(f"{engine}: skipped, not installed (make engines)")
            continue
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
        for latency in (float(x) for x in args.latency.split(",")):
            results.append({**bench(engine, args.rounds, latency), "load": os.getloadavg()})
        print(f"  load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
