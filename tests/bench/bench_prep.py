"""Benchmark: a prep copy of a generated ~20k-file repository against two anchors.

Anchors, measured in the same run on the same file list:
- the floor: `tar -c --null -T <list> | tar -x` (no checks at all);
- `git worktree add --detach` (what a checkout of HEAD costs).
Prints each figure as a ratio against its anchor, plus peak memory. The prep
copy is timed as it runs (two processes when there is spare CPU)
and, for comparison, forced into one process. Each ratio is
given twice: best against best, and the median of per-round ratios (each round
runs the contenders back to back, so they share that moment's load).
Run: python tests/bench/bench_prep.py [--files N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))
sys.path.insert(0, str(ROOT / "tests"))

from support import git  # noqa: E402


def generate(root: Path, files: int) -> None:
    """A repository shaped like a real one: nested folders, mostly small text files, a few larger."""
    root.mkdir()
    git(root, "init", "-q")
    per_dir = 40
    for i in range(files):
        d = root / f"pkg{i // (per_dir * 25)}" / f"mod{(i // per_dir) % 25}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        size = 200 + (i * 7919) % 4000 if i % 97 else 64 * 1024
        (d / f"file{i}.py").write_bytes((f"# {i}\n".encode() * (size // 5 + 1))[:size])
    (root / ".gitignore").write_text("node_modules/\n*.log\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "index.js").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "generated")
    for i in range(0, files, 50):  # some dirty and untracked files
        (root / f"pkg0/mod0/untracked{i}.txt").write_text("u\n")


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children so far."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds incl. child processes) of one call.

    CPU time is the steadier figure on a shared machine: other people's load
    stretches wall time but not the work this call itself does.
    """
    cpu = _cpu()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start, _cpu() - cpu


def tar_copy(repo: Path, listing: bytes, dest: Path) -> None:
    dest.mkdir()
    create = subprocess.Popen(
        ["tar", "-c", "--null", "-T", "-", "-f", "-"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    extract = subprocess.Popen(["tar", "-x", "-f", "-"], cwd=dest, stdin=create.stdout)
    assert create.stdin is not None and create.stdout is not None
    create.stdin.write(listing)
    create.stdin.close()
    create.stdout.close()
    if extract.wait() != 0 or create.wait() != 0:
        raise SystemExit("tar failed")


def worktree_add(repo: Path, dest: Path) -> None:
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "--detach", str(dest)],
        cwd=repo, check=True, capture_output=True,
    )


def worktree_remove(repo: Path, dest: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(dest)], cwd=repo, check=True, capture_output=True)


_PEAK = """
import sys
from autocode.prep import make_prep_copy

def hwm():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

before = hwm()
make_prep_copy(sys.argv[1])
print(before, hwm())
"""


def prep_peak_memory(repo: Path) -> tuple[int, int]:
    """(peak RSS after importing prep, peak RSS after one copy) of a fresh process, in KiB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "engine")}
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(repo)], capture_output=True, text=True, check=True, env=env
    )
    before, after = out.stdout.split()
    return int(before), int(after)


def tar_peak_memory(repo: Path, listing: bytes, dest: Path) -> int:
    """Peak RSS of the extracting tar, in KiB (GNU time)."""
    dest.mkdir()
    create = subprocess.Popen(["tar", "-c", "--null", "-T", "-", "-f", "-"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    extract = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", "tar", "-x", "-f", "-"], cwd=dest, stdin=create.stdout, stderr=subprocess.PIPE
    )
    assert create.stdin is not None and create.stdout is not None and extract.stderr is not None
    create.stdin.write(listing)
    create.stdin.close()
    create.stdout.close()
    err = extract.stderr.read().decode()
    extract.wait()
    create.wait()
    return int(err.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--dir",
        default="/dev/shm" if os.path.isdir("/dev/shm") else None,
        help="where to build the repository (default: tmpfs when present, so disk noise from "
        "other work does not swamp the per-file costs being compared)",
    )
    opts = parser.parse_args()

    from autocode import gitsafe
    from autocode.prep import PrepResult, copier, inventory, make_prep_copy

    split_min = copier.SPLIT_MIN_ENTRIES

    def one_process_copy(out: list[PrepResult]) -> None:
        """The copy as a one-core machine makes it (no second process)."""
        copier.SPLIT_MIN_ENTRIES = 10**9
        try:
            out.append(make_prep_copy(repo))
        finally:
            copier.SPLIT_MIN_ENTRIES = split_min

    with tempfile.TemporaryDirectory(prefix="bench-prep-", dir=opts.dir) as tmp:
        base = Path(tmp)
        repo = base / "repo"
        generate(repo, opts.files)
        inv = inventory(repo)
        files = [e.path for e in inv.entries if e.kind == "file"]
        listing = b"".join(os.fsencode(p) + b"\0" for p in files)
        enum = min(timed(lambda: gitsafe.tracked_files(repo))[0] for _ in range(3))
        runs: dict[str, list[tuple[float, float]]] = {
            "tar": [], "worktree": [], "prep": [], "prep1": [], "inventory": []
        }
        load_before = os.getloadavg()
        for r in range(opts.rounds):
            dest = base / f"tar{r}"
            runs["tar"].append(timed(lambda d=dest: tar_copy(repo, listing, d)))  # type: ignore[misc]
            shutil.rmtree(dest)
            dest = base / f"wt{r}"
            runs["worktree"].append(timed(lambda d=dest: worktree_add(repo, d)))  # type: ignore[misc]
            worktree_remove(repo, dest)
            made: list[PrepResult] = []
            runs["prep"].append(timed(lambda out=made: out.append(make_prep_copy(repo))))  # type: ignore[misc]
            shutil.rmtree(made[0].copy.parent)
            made.clear()
            runs["prep1"].append(timed(lambda out=made: one_process_copy(out)))  # type: ignore[misc]
            shutil.rmtree(made[0].copy.parent)
            runs["inventory"].append(timed(lambda: inventory(repo)))
        load_after = os.getloadavg()
        wall = {k: min(w for w, _ in v) for k, v in runs.items()}
        cpu = {k: min(c for _, c in v) for k, v in runs.items()}

        def paired(key: str, anchor: str, which: int) -> float:
            """Median over rounds of this round's ratio (neighbours share the machine's load)."""
            ratios = sorted(a[which] / b[which] for a, b in zip(runs[key], runs[anchor], strict=True))
            return ratios[len(ratios) // 2]

        def line(label: str, key: str, anchor: str, goal: str) -> None:
            print(
                f"{label:30}: wall {wall[key] / wall[anchor]:.2f}x best, {paired(key, anchor, 0):.2f}x median pair; "
                f"cpu {cpu[key] / cpu[anchor]:.2f}x  ({wall[key] * 1000:.0f} ms wall, {cpu[key] * 1000:.0f} ms cpu; {goal})"
            )

        print(f"repository: {len(files)} files ({len(inv.entries)} inventory entries), best of {opts.rounds}")
        print(f"load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after; {os.cpu_count()} cores")
        print(f"tar floor                     : 1.00x  ({wall['tar'] * 1000:.0f} ms wall, {cpu['tar'] * 1000:.0f} ms cpu)")
        print(f"git worktree add --detach     : {wall['worktree'] * 1000:.0f} ms wall, {cpu['worktree'] * 1000:.0f} ms cpu")
        line("prep copy vs tar floor", "prep", "tar", "goal <= 1.5x")
        line("prep copy vs worktree add", "prep", "worktree", "goal < 1.0x")
        line("one process vs worktree add", "prep1", "worktree", "a one-core machine; for comparison")
        line("inventory alone vs tar", "inventory", "tar", f"git ls-files alone {enum * 1000:.0f} ms")
        mem_before, mem_after = prep_peak_memory(repo)
        tar_mem = tar_peak_memory(repo, listing, base / "tar-mem") if shutil.which("/usr/bin/time") else 0
        shutil.rmtree(base / "tar-mem", ignore_errors=True)
        # Memory must not grow with file size: one 256 MiB file more adds nothing.
        big = repo / "big.bin"
        with open(big, "wb") as f:
            for _ in range(256):
                f.write(os.urandom(1 << 20))
        big_before, big_after = prep_peak_memory(repo)
        print(f"peak memory: prep process {mem_after} KiB after the copy, {mem_before} KiB after import "
              f"(+{mem_after - mem_before} KiB for {len(files)} files); tar -x {tar_mem} KiB")
        print(f"peak memory with one 256 MiB file added: +{big_after - big_before} KiB over import "
              "(streamed: no growth with file size)")


if __name__ == "__main__":
    main()
