"""Benchmark: what proving a change costs, against running the suite once, same run.

A generated pytest project of 300 tests (a module per 10 tests, each test a little real work)
and a change that fixes one function and adds a test for it. Measured per round, back to back:
- the anchor: the project's test command once, through the same runner (autocode.sandbox.run);
- proof, cold: `prove()` with an empty baseline cache (candidate + base + probe);
- proof, warm: `prove()` again with the base run cached (candidate + probe).
Goals (issue 29): warm <= 1.3x, cold <= 2.2x of the anchor.
Run: python tests/bench/bench_proof.py [--tests N] [--rounds R]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests"))

from autocode import sandbox  # noqa: E402
from autocode.proof.run import prove  # noqa: E402
from support import make_repo  # noqa: E402

PER_MODULE = 10
BUGGY = "def scale(x):\n    return x * 2\n"
FIXED = "def scale(x):\n    return x * 3\n"


def generate(root: Path, tests: int) -> Path:
    files = {"pytest.ini": "[pytest]\ntestpaths = tests\n", "conftest.py": "", "lib/__init__.py": "",
             "lib/scale.py": BUGGY, "tests/__init__.py": ""}
    for m in range(tests // PER_MODULE):
        files[f"lib/mod{m}.py"] = f"def work(n):\n    return sum(i * {m + 1} for i in range(n))\n"
        body = [f"from lib.mod{m} import work\n"]
        for t in range(PER_MODULE):
            body.append(f"\n\ndef test_{m}_{t}():\n    assert work({200 + t}) == sum(i * {m + 1} for i in range({200 + t}))\n")
        files[f"tests/test_mod{m}.py"] = "".join(body)
    return make_repo(root, files)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    with tempfile.TemporaryDirectory(prefix="bench-proof-") as tmp:
        work = Path(tmp)
        repo = generate(work / "proj", args.tests)
        copy = work / "copy"
        shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"))
        base_files = {"lib/scale.py": BUGGY.encode(), "tests/test_scale.py": None}
        (copy / "lib" / "scale.py").write_text(FIXED)
        (copy / "tests" / "test_scale.py").write_text(
            "from lib.scale import scale\n\n\ndef test_scale_triples():\n    assert scale(2) == 6\n"
        )
        anchors, colds, warms = [], [], []
        for r in range(args.rounds):
            started = time.perf_counter()
            outcome = sandbox.run(command.split(), copy=copy, workspace=repo, cwd=copy, timeout=600,
                                  cancelled=lambda: False, policy=sandbox.Policy())
            anchors.append(time.perf_counter() - started)
            assert outcome.exit_code == 0, outcome.output[-2000:]
            cache = work / f"cache{r}"
            started = time.perf_counter()
            cold = prove(command, copy=copy, workspace=repo, base_files=base_files, cache_dir=cache)
            colds.append(time.perf_counter() - started)
            started = time.perf_counter()
            warm = prove(command, copy=copy, workspace=repo, base_files=base_files, cache_dir=cache)
            warms.append(time.perf_counter() - started)
            assert cold.verdict.status == warm.verdict.status == "verified", cold.to_dict()
        anchor = statistics.median(anchors)
        cold_ratio = statistics.median(c / a for c, a in zip(colds, anchors, strict=True))
        warm_ratio = statistics.median(w / a for w, a in zip(warms, anchors, strict=True))
        print(f"suite once ({args.tests + 1} tests, sandbox {outcome.sandbox}): {anchor:.2f} s (anchor)")
        print(f"proof, base cached: {statistics.median(warms):.2f} s = {warm_ratio:.2f}x (goal <= 1.3x)")
        print(f"proof, cold: {statistics.median(colds):.2f} s = {cold_ratio:.2f}x (goal <= 2.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
