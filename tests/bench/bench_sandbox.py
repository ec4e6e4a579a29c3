"""Benchmark: the sandbox's cost on a test command, and its start-up.

Figures, each against its anchor measured in the same run, interleaved round by round:
- a generated 300-test pytest project run through `sandbox.run` (bubblewrap, the copy at the
  workspace's path, the `.venv`-style binds) against the same command through `sandbox.run`
  with the sandbox off (same environment rules, same streaming): goal <= 1.05x;
- `true` in bubblewrap (with every mount a task run gets) against bare `true`: the sandbox's
  start, goal <= 30 ms above the bare start.
Ratios are the median of per-round ratios (each round runs both back to back, sharing that
moment's load), with the fastest of each beside them.
Run: python tests/bench/bench_sandbox.py [--tests N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))

from autocode import sandbox  # noqa: E402
from autocode.prep import make_prep_copy  # noqa: E402
from autocode.sandbox import bwrap  # noqa: E402


def generate(root: Path, tests: int) -> None:
    """A project of `tests` small pytest tests over 10 modules, committed."""
    (root / "tests").mkdir(parents=True)
    (root / "calc").mkdir()
    (root / "calc" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    per_file = max(1, tests // 10)
    for f in range(10):
        body = ["from calc import add\n"]
        for t in range(per_file):
            body.append(f"\ndef test_add_{f}_{t}():\n    assert add({t}, {f}) == {t + f}\n")
        (root / "tests" / f"test_calc_{f}.py").write_text("".join(body))
    (root / ".gitignore").write_text(".venv/\n__pycache__/\n.pytest_cache/\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@example.invalid",
                                                    "commit", "-q", "-m", "generated"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if not sandbox.available():
        print(f"sandbox: skipped, {sandbox.describe()['why']}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "project"
        generate(workspace, args.tests)
        copy = make_prep_copy(workspace).copy
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        on, off = sandbox.Policy(), sandbox.Policy(enabled=False)

        def suite(policy: sandbox.Policy) -> None:
            outcome = sandbox.run(argv, copy=copy, workspace=workspace, cwd=copy, timeout=300,
                                  cancelled=lambda: False, policy=policy, env=env)
            assert outcome.exit_code == 0 and f"{args.tests} passed" in outcome.output, outcome.output[-2000:]

        def bare_true() -> None:
            subprocess.run(["true"], check=True)

        raw = bwrap.command(str(bwrap.probe().program), ["true"], copy=copy, workspace=workspace,
                            cwd_seen=workspace, home=bwrap.program_home(), dependencies=[], writable=[],
                            network=False)

        def raw_true() -> None:
            subprocess.run(raw, check=True)

        def boxed_true() -> None:
            outcome = sandbox.run(["true"], copy=copy, workspace=workspace, cwd=copy, timeout=30,
                                  cancelled=lambda: False, policy=on)
            assert outcome.exit_code == 0, outcome.output

        suite(on), suite(off)  # warm the page cache and the interpreter's bytecode
        suite_on, suite_off, start_on, start_off, start_raw = [], [], [], [], []
        for _ in range(args.rounds):
            suite_on.append(_timed(lambda: suite(on)))
            suite_off.append(_timed(lambda: suite(off)))
            for _ in range(5):
                start_on.append(_timed(boxed_true))
                start_raw.append(_timed(raw_true))
                start_off.append(_timed(bare_true))
        load = os.getloadavg()[0]
    ratio = statistics.median(a / b for a, b in zip(suite_on, suite_off, strict=True))
    start_cost = (statistics.median(start_raw) - statistics.median(start_off)) * 1000
    run_cost = (statistics.median(start_on) - statistics.median(start_off)) * 1000
    print(f"sandbox: {args.tests}-test pytest project, {args.rounds} interleaved rounds; "
          f"load average at the end {load:.2f} ({os.cpu_count()} cores)")
    print(f"  anchor  suite with the sandbox off        median {statistics.median(suite_off) * 1000:7.0f} ms"
          f"  fastest {min(suite_off) * 1000:7.0f} ms")
    print(f"  figure  suite in bubblewrap               median {statistics.median(suite_on) * 1000:7.0f} ms"
          f"  fastest {min(suite_on) * 1000:7.0f} ms  {ratio:.3f}x paired median"
          f"  ({min(suite_on) / min(suite_off):.3f}x fastest)")
    print(f"  goal <= 1.05x (paired median): {'met' if ratio <= 1.05 else 'NOT met'}")
    print(f"  anchor  bare `true`                       median {statistics.median(start_off) * 1000:7.1f} ms")
    print(f"  figure  `true` in bwrap (a task's mounts) median {statistics.median(start_raw) * 1000:7.1f} ms"
          f"  start cost {start_cost:.1f} ms")
    print(f"  figure  `true` through sandbox.run        median {statistics.median(start_on) * 1000:7.1f} ms"
          f"  cost {run_cost:.1f} ms (environment, dependency check, streaming)")
    print(f"  goal sandbox start <= 30 ms: {'met' if start_cost <= 30 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
