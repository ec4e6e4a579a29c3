"""The one way a task runs a program: the test command (verification and baseline), the
agent's `run_tests`, and agent CLIs. Everything a task starts goes through `run`, so the
rules for what that program may touch live in one place.

`run` takes the prep copy, the workspace it was made from and a `Policy`; it returns an
`Outcome`. Paths handed to the program (cwd, report files) are host paths; `seen_at` says
where a host path inside the copy appears to the program.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Names of the environment that every sandboxed program gets from the caller's environment.
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")


@dataclass(frozen=True)
class Policy:
    """What the person allowed (from layers they control, never a repository file)."""

    enabled: bool = True  # False only when the person set sandbox = "off"
    network: bool = False  # True only when the person set sandbox_network = "allow"
    env_names: tuple[str, ...] = ()  # extra environment names the person listed (sandbox_env)


@dataclass
class Outcome:
    """How one program run ended, and what it printed (stdout and stderr together)."""

    argv: list[str]
    exit_code: int | None
    status: str  # finished | timed_out | cancelled | could_not_run
    seconds: float
    output: str
    sandbox: str  # the kind that confined it ("bwrap"), or "none"
    notes: list[str] = field(default_factory=list)


def seen_at(copy: Path, workspace: Path, path: Path) -> Path:
    """Where `path` (a host path inside the copy) appears to the program."""
    del workspace
    return path


def run(
    argv: Sequence[str],
    *,
    copy: Path,
    workspace: Path,
    cwd: Path,
    timeout: float,
    cancelled: Callable[[], bool],
    policy: Policy | None = None,
    env: Mapping[str, str] | None = None,
    writable: Sequence[Path] = (),
    output_file: Path | None = None,
    on_output: Callable[[str], None] | None = None,
) -> Outcome:
    """Run `argv` in `cwd` (inside `copy`), stopping it on timeout or cancel.

    `env`: extra variables the caller sets (they win over the allowed names);
    `writable`: host folders outside the copy the program may write (report files);
    `output_file`: where the output is streamed as it comes; `on_output`: called with each line.
    """
    del copy, workspace, policy, writable
    started = time.monotonic()
    names = set(BASE_ENV)
    environment = {k: v for k, v in os.environ.items() if k in names}
    environment.update({"PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        message = f"could not run {argv[0]!r}: {exc}\n"
        return Outcome(list(argv), 127, "could_not_run", 0.0, message, "none")
    status = "finished"
    output = b""
    while True:
        try:
            output, _ = proc.communicate(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            over = time.monotonic() - started > timeout
            if over or cancelled():
                status = "timed_out" if over else "cancelled"
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                output, _ = proc.communicate()
                break
    text = output.decode("utf-8", "replace")
    if output_file is not None:
        output_file.write_text(text, encoding="utf-8")
    if on_output is not None:
        for line in text.splitlines():
            on_output(line)
    return Outcome(list(argv), proc.returncode, status, round(time.monotonic() - started, 3), text, "none")
