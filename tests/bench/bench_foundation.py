"""Benchmark: `autocode --help` and `autocode doctor --json` on a 10k-file repository.

Each figure is a ratio against `python3 -I -c pass` measured in the same run,
rounds interleaved so that machine noise hits every command alike.
Run: `python tests/bench/bench_foundation.py` (exit 1 when a budget is exceeded).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 15
FILES = 10_000
BUDGETS = {"autocode --help": 3.0, "autocode doctor --json (10k files)": 12.0}


def _autocode() -> list[str]:
    script = Path(sys.executable).parent / "autocode"
    return [str(script)] if script.exists() else [sys.executable, "-m", "autocode"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, check=True, capture_output=True)


def make_repository(root: Path, files: int = FILES) -> Path:
    """A git repository with `files` committed files, Python tests and a learned record."""
    repo = root / "repo"
    for index in range(files):
        path = repo / f"pkg{index % 100:02d}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {index}\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_values.py").write_text("import unittest\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "bench"\n\n[tool.autocode]\ntest_timeout = 900\n')
    record = {
        "version": 1,
        "framework": "unittest",
        "test_command": "python3 -m unittest discover -s tests -t .",
        "conventions": [{"question": f"Question {i}?", "answer": f"Answer {i}."} for i in range(50)],
        "routes": [],
        "human_pause_states": ["WAITING_FOR_USER"],
    }
    (repo / ".autocode").mkdir()
    (repo / ".autocode" / "project.json").write_text(json.dumps(record, indent=2))
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, check=True, capture_output=True, env=env)
    return repo


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="autocode-bench-"))
    try:
        repo = make_repository(folder)
        # The interpreter AutoCode runs on, not a launcher shim (pyenv's would add ~100 ms to the anchor).
        python3 = os.path.realpath(sys.executable)
        commands = {
            "anchor": [python3, "-I", "-c", "pass"],
            "autocode --help": [*_autocode(), "--help"],
            "autocode doctor --json (10k files)": [*_autocode(), "doctor", "--workspace", str(repo), "--json"],
        }
        for cmd in commands.values():  # warm caches once
            _time(cmd)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(ROUNDS):
            for name, cmd in commands.items():
                samples[name].append(_time(cmd))
        anchor = statistics.median(samples["anchor"])
        print(f"anchor {Path(python3).name} -I -c pass: median of {ROUNDS} = {anchor * 1000:.1f} ms")
        failed = False
        for name, budget in BUDGETS.items():
            ratio = statistics.median(samples[name]) / anchor
            verdict = "ok" if ratio <= budget else "OVER BUDGET"
            failed |= ratio > budget
            print(f"{name}: {ratio:.1f}x anchor (budget {budget:g}x) {verdict}")
        return 1 if failed else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
