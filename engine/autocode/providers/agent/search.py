"""The `search` tool's engine: ripgrep when it is installed, else Python's `re` in a child process.

ripgrep's regular expressions run in linear time, so no pattern can stall
it; Python's engine backtracks (`(a+)+$` over a long line runs for ever), so
the fallback runs in a child process. Either way the search is a child
process that `run_bounded` kills (its whole process group) when the call's
time limit passes or the task is cancelled, and whose output is capped.
Both read only the copy: relative paths from the copy as working folder,
links never followed, `.git`, `.autocode` and caches skipped, files over
`FILE_BYTES` and binary files skipped, long lines cut at `COLUMNS`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

SECONDS = 10.0  # a search's own limit; the task's time left can make it shorter
OUTPUT_BYTES = 1_000_000
ERROR_BYTES = 16_000
FILE_BYTES = 1_000_000
COLUMNS = 300
PATTERN_CHARS = 2000
_CHILD = Path(__file__).with_name("search_child.py")
_POLL = 0.05


class Stopped(Exception):
    """A child process stopped at its time limit ("timed_out") or for a cancel ("cancelled")."""

    def __init__(self, reason: str, seconds: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.seconds = seconds


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    text: str


@dataclass
class Found:
    hits: list[Hit]
    more: int  # matches past `max_hits`
    counted_all: bool  # False when the output cap stopped the count of `more`
    engine: str


@dataclass
class Ran:
    code: int | None
    out: bytes
    err: bytes
    cut: bool  # the output reached its cap and the process was stopped


def engine() -> str:
    """`ripgrep` or `python`: what `find` will use on this machine now."""
    return "ripgrep" if shutil.which("rg") else "python"


def find(
    copy: Path,
    pattern: str,
    paths: list[str],
    *,
    skipped_dirs: Iterable[str],
    seconds: float,
    cancelled: Callable[[], bool] | None,
    max_hits: int,
) -> Found:
    """Matches of `pattern` under `paths` (relative to `copy`, "." for all of it), in path order.

    Raises ValueError with the engine's message for a pattern it cannot compile,
    and Stopped when the limit passes or the task is cancelled first.
    """
    rg = shutil.which("rg")
    skipped = sorted(skipped_dirs)
    if rg is not None:
        argv = [
            rg, "--no-config", "--no-ignore", "--hidden", "--no-follow", "--one-file-system",
            "--null", "--line-number", "--with-filename", "--no-heading", "--color", "never",
            "--max-columns", str(COLUMNS), "--max-columns-preview", "--max-filesize", str(FILE_BYTES),
            "--sort", "path", "--no-messages",
            *[f"--glob=!{name}/" for name in skipped], "--glob=!*.autocode-tmp",
            "--regexp", pattern, "--", *[p if p != "." else "./" for p in paths],
        ]
        stdin = None
        name = "ripgrep"
    else:
        argv = [sys.executable, "-I", "-S", str(_CHILD)]
        stdin = "\0".join([pattern, str(FILE_BYTES), str(COLUMNS), ",".join(skipped), *paths]).encode(
            "utf-8", "surrogateescape"
        )
        name = "python"
    ran = run_bounded(argv, copy, seconds=seconds, cancelled=cancelled, max_bytes=OUTPUT_BYTES, stdin=stdin)
    hits: list[Hit] = []
    more = 0
    for raw in ran.out.split(b"\n"):
        where, sep, rest = raw.partition(b"\0")
        if not sep:
            continue  # "binary file matches" and other notes without a path
        number, _, text = rest.partition(b":")
        if not number.isdigit():
            continue
        if len(hits) >= max_hits:
            more += 1
            continue
        rel = where.decode("utf-8", "surrogateescape").removeprefix("./")
        hits.append(Hit(rel, int(number), text.decode("utf-8", "replace").removesuffix("\r")))
    if not hits and ran.code == 2 and ran.err.strip():
        raise ValueError(_engine_message(ran.err.decode("utf-8", "replace")))
    return Found(hits, more, not ran.cut, name)


def _engine_message(text: str) -> str:
    # ripgrep suggests its backtracking PCRE2 engine, which this tool never uses.
    kept = text.split("\nConsider enabling PCRE2")[0].strip()
    return kept.removeprefix("regex parse error:").strip()


def run_bounded(
    argv: list[str],
    cwd: Path,
    *,
    seconds: float,
    cancelled: Callable[[], bool] | None,
    max_bytes: int,
    stdin: bytes | None = None,
) -> Ran:
    """Run `argv` in its own process group, killed at `seconds`, on cancel, or at `max_bytes` of output."""
    started = time.monotonic()
    deadline = started + max(seconds, 0.0)
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"},
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    stop: str | None = None
    cut = False
    try:
        if stdin is not None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        assert proc.stdout is not None and proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ, out)
            sel.register(proc.stderr, selectors.EVENT_READ, err)
            checked = started
            while sel.get_map():
                now = time.monotonic()
                if now >= deadline:
                    stop = "timed_out"
                    break
                if cancelled is not None and now - checked >= _POLL:
                    checked = now
                    if cancelled():
                        stop = "cancelled"
                        break
                for key, _ in sel.select(timeout=min(_POLL, deadline - now)):
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        continue
                    buffer: bytearray = key.data
                    buffer += data
                if len(out) >= max_bytes:
                    cut = True
                    break
                if len(err) > ERROR_BYTES:
                    del err[ERROR_BYTES:]
        if stop is None and not cut:
            try:  # both pipes are closed: the process is ending
                proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                stop = "timed_out"
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    if stop is not None:
        raise Stopped(stop, time.monotonic() - started)
    return Ran(None if cut else proc.returncode, bytes(out[:max_bytes]), bytes(err), cut)
