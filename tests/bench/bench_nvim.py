"""Neovim plugin overhead: `python tests/bench/bench_nvim.py`.

In one headless Neovim against one real server (a sample repository):
- a command through the plugin (`require('autocode.client').call`, which waits
  for initialization and watches for a dead server) against a bare
  `client:request` of the same `workspace/executeCommand` (anchor);
- `:AutoCode doctor` until its buffer exists against the bare doctor request.
Each figure is a ratio of medians measured in the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "shop"
        subprocess.run(
            [sys.executable, str(ROOT / "fixtures" / "samples" / "build.py"), "pytest", str(repo)],
            check=True,
            capture_output=True,
        )
        env = dict(os.environ)
        for name in ("CONFIG", "DATA", "STATE", "CACHE"):
            env[f"XDG_{name}_HOME"] = str(Path(tmp) / "xdg" / name.lower())
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        script = ROOT / "editors" / "nvim" / "tests" / "bench_roundtrip.lua"
        proc = subprocess.run(
            [str(BIN / "nvim"), "--headless", "--clean", "-l", str(script)],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        line = next((x for x in proc.stdout.splitlines() if x.startswith("BENCH ")), None)
        if proc.returncode != 0 or line is None:
            sys.stderr.write(proc.stdout + proc.stderr)
            return 1
        samples = json.loads(line[len("BENCH ") :])
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"anchor: bare client:request of autocode.protocol.info, median {med['bare']:.2f} ms")
    print(
        f"plugin call of autocode.protocol.info: {med['plugin'] / med['bare']:.2f}x ({med['plugin']:.2f} ms)"
    )
    print(f"anchor: bare client:request of autocode.doctor, median {med['raw_doctor']:.1f} ms")
    print(
        f":AutoCode doctor to its buffer: {med['doctor'] / med['raw_doctor']:.2f}x "
        f"({med['doctor']:.1f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
