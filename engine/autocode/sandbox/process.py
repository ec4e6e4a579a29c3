"""One program from start to end: its output streamed to a file and to a line callback as it
comes, its time limit, its idle limit (seconds without output) and cancel checked every tenth of
a second, and on any of them the whole process group killed (inside bubblewrap the pid
namespace dies with it). A program also dies with the process that started it, and a group a
killed process left is ended later (`children`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from autocode.sandbox import children

POLL_SECONDS = 0.1
# Output kept in memory for the Outcome; the output file gets all of it.
MEMORY_LIMIT = 32 * 1024 * 1024
# How long the output may keep coming after the program ended (a child it left holds the pipe).
DRAIN_SECONDS = 2.0


@dataclass
class Ended:
    exit_code: int | None
    status: str  # finished | timed_out | idle | cancelled
    seconds: float
    output: str
    dropped: int  # bytes of output not kept in memory (the start of a very long output)


class _Reader(threading.Thread):
    """Reads the program's output until the end, passing it on as it comes."""

    def __init__(self, stream: int, sink: int | None, on_output: Callable[[str], None] | None) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.sink = sink
        self.on_output = on_output
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0
        self.partial = b""
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.last = time.monotonic()  # when output last came (the idle limit counts from it)

    def run(self) -> None:
        # The reader owns both descriptors: it closes them when it ends, so a descriptor is
        # never closed under a read still in progress (a left-behind child may hold the pipe).
        try:
            while not self.stop.is_set():
                try:
                    data = os.read(self.stream, 65536)
                except OSError:
                    break
                if not data:
                    break
                self.last = time.monotonic()
                with self.lock:
                    self._take(data)
            if self.partial and self.on_output is not None:
                self._say(self.partial)
        finally:
            os.close(self.stream)
            if self.sink is not None:
                os.close(self.sink)

    def output(self) -> tuple[bytes, int]:
        with self.lock:
            return b"".join(self.chunks), self.dropped

    def _take(self, data: bytes) -> None:
        if self.sink is not None:
            with contextlib.suppress(OSError):
                os.write(self.sink, data)
        self.chunks.append(data)
        self.kept += len(data)
        while self.kept > MEMORY_LIMIT and len(self.chunks) > 1:
            first = self.chunks.pop(0)
            self.kept -= len(first)
            self.dropped += len(first)
        if self.on_output is not None:
            lines = (self.partial + data).split(b"\n")
            self.partial = lines.pop()
            for line in lines:
                self._say(line)

    def _say(self, line: bytes) -> None:
        assert self.on_output is not None
        with contextlib.suppress(Exception):  # a failing progress callback never stops the run
            self.on_output(line.decode("utf-8", "replace").rstrip("\r"))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    cancelled: Callable[[], bool],
    output_file: Path | None,
    on_output: Callable[[str], None] | None,
    idle_timeout: float | None = None,
) -> Ended:
    """Run `argv` to its end, its time limit, `idle_timeout` seconds without output, or a cancel;
    raises OSError when it cannot start."""
    started = time.monotonic()
    sink = None
    if output_file is not None:
        # The run's evidence is its owner's alone (0600), as every file a run writes.
        sink = os.open(output_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdout=write_end,
            stderr=write_end,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
            preexec_fn=children.die_with_parent,
        )
    except BaseException:
        for fd in (read_end, write_end, sink):
            if fd is not None:
                os.close(fd)
        raise
    os.close(write_end)
    written_down = children.record(proc.pid)
    reader = _Reader(read_end, sink, on_output)
    reader.start()
    status = "finished"
    try:
        status = _wait(proc, started, timeout, cancelled, reader if idle_timeout else None, idle_timeout or 0.0)
    finally:
        # Whatever the program left behind in its group goes with it (and everything on an error).
        _kill_group(proc.pid)
        proc.wait()
        children.forget(written_down)
    reader.join(DRAIN_SECONDS)
    reader.stop.set()
    seconds = round(time.monotonic() - started, 3)
    data, dropped = reader.output()
    return Ended(proc.returncode, status, seconds, data.decode("utf-8", "replace"), dropped)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` exits (Linux 5.3+), else None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _wait(
    proc: subprocess.Popen[bytes], started: float, timeout: float, cancelled: Callable[[], bool],
    reader: _Reader | None = None, idle: float = 0.0,
) -> str:
    """How the program ended: by itself, by the time limit, silent for `idle` seconds (when a
    reader is given) or by a cancel (then it is killed)."""
    fd = _pidfd(proc.pid)
    watch = select.poll()
    if fd is not None:
        watch.register(fd, select.POLLIN)
    try:
        while True:
            if fd is not None:
                # Wakes the moment the program ends (Popen.wait(timeout) sleeps in steps of up to 50 ms).
                if watch.poll(POLL_SECONDS * 1000):
                    proc.wait()
                    return "finished"
            else:
                try:
                    proc.wait(timeout=POLL_SECONDS)
                    return "finished"
                except subprocess.TimeoutExpired:
                    pass
            now = time.monotonic()
            if now - started > timeout:
                status = "timed_out"
            elif reader is not None and now - reader.last > idle:
                status = "idle"
            elif cancelled():
                status = "cancelled"
            else:
                continue
            _kill_group(proc.pid)
            proc.wait()
            return status
    finally:
        if fd is not None:
            os.close(fd)
