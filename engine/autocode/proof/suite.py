"""One run of a test suite through the task's one runner (`autocode.sandbox.run`), read into
per-test results, and the base run's cache: a base tree's runs are keyed by every file of the
tree and the command, so a second task on the same base does not run it again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.atomic import write_atomically
from autocode.errors import UsageError
from autocode.proof import frameworks
from autocode.proof.results import Report, TestResult

if TYPE_CHECKING:
    from autocode.sandbox.policy import Policy

Progress = Callable[[str], None]
CACHE_VERSION = 2  # 2: mocha/jest ids relative to the project even when the sandbox moves the copy
PROGRESS_EVERY_S = 2.0


@dataclass
class RunRecord:
    """One run of the suite: what ran, how it ended, and what it said per test."""

    role: str  # candidate | base | probe
    argv: list[str]
    status: str
    exit_code: int | None
    seconds: float
    sandbox: str
    report: Report
    cached: bool = False
    output: str = ""

    def summary(self) -> dict[str, Any]:
        results = self.report.results
        counts: dict[str, int] = {}
        for r in results or ():
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        return {
            "role": self.role,
            "command": shlex.join(self.argv),
            "status": self.status,
            "exit_code": self.exit_code,
            "seconds": self.seconds,
            "sandbox": self.sandbox,
            "framework": self.report.framework,
            "per_test": results is not None,
            "reason": self.report.reason,
            "counts": counts,
            "cached": self.cached,
        }


def run_suite(
    role: str,
    argv: list[str],
    *,
    framework: str | None,
    tree: Path,
    workspace: Path,
    cwd_rel: str,
    timeout: float,
    cancelled: Callable[[], bool],
    policy: Policy | None,
    output_file: Path | None,
    progress: Progress | None,
    on_output: Callable[[str], None] | None,
) -> RunRecord:
    # lazy: the runner pulls in subprocess machinery only a verification needs
    from autocode import sandbox

    cwd = tree / cwd_rel if cwd_rel else tree
    with tempfile.TemporaryDirectory(prefix="autocode-report-") as scratch:
        report_dir = Path(scratch)
        inst = frameworks.instrument(argv, framework=framework, report_dir=report_dir, project=tree, cwd=cwd)
        counted = [time.monotonic()]

        def on_line(line: str) -> None:
            if on_output is not None:
                on_output(line)
            # Every few seconds, the tests finished so far (read from the growing report).
            if inst is None or progress is None or time.monotonic() - counted[0] < PROGRESS_EVERY_S:
                return
            counted[0] = time.monotonic()
            done = frameworks.progress(inst, report_dir=report_dir)
            if done:
                progress(f"{role}: {done} tests finished so far")

        outcome = sandbox.run(
            inst.argv if inst else argv,
            copy=tree,
            workspace=workspace,
            cwd=inst.cwd if inst else cwd,
            timeout=timeout,
            cancelled=cancelled,
            policy=policy,
            env=inst.env if inst else None,
            writable=[report_dir],
            output_file=output_file,
            on_output=on_line,
        )
        if inst is None:
            report = Report(framework or "unknown", None, frameworks.why_not(argv, project=tree, cwd=cwd))
        elif outcome.status != "finished":
            report = Report(inst.framework, None, f"the run {outcome.status.replace('_', ' ')}")
        else:
            seen = sandbox.seen_at(tree, workspace, inst.cwd, policy=policy)
            report = frameworks.read_report(inst, report_dir=report_dir, output=outcome.output, project=tree,
                                            seen_cwd=str(seen))
    return RunRecord(
        role, list(outcome.argv), outcome.status, outcome.exit_code, outcome.seconds, outcome.sandbox, report,
        output=outcome.output,
    )


def tree_key(tree: Path, argv: Sequence[str], cwd_rel: str, framework: str | None) -> str:
    """What a base run depends on: every file's path, mode and content, and the command."""
    digest = hashlib.sha256(json.dumps([CACHE_VERSION, list(argv), cwd_rel, framework]).encode())
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, tree)
            st = os.lstat(full)
            digest.update(os.fsencode(rel) + b"\0" + str(st.st_mode).encode() + b"\0")
            if os.path.islink(full):
                digest.update(os.fsencode(os.readlink(full)))
            else:
                with open(full, "rb") as fh:
                    digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


def cache_read(cache_dir: Path | None, key: str) -> Report | None:
    if cache_dir is None:
        return None
    try:
        data = json.loads((cache_dir / f"{key}.json").read_text(encoding="utf-8"))
        results = tuple(
            TestResult(str(r["id"]), r["outcome"], r.get("file"), r.get("message")) for r in data["results"]
        )
        return Report(str(data["framework"]), results, None)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no cache, or one this version cannot read: run the base again


def cache_write(cache_dir: Path | None, key: str, report: Report) -> None:
    if cache_dir is None or report.results is None:
        return
    data = {
        "framework": report.framework,
        "results": [{"id": r.id, "outcome": r.outcome, "file": r.file, "message": r.message} for r in report.results],
    }
    # A cache that cannot be written costs the next task one base run, nothing more.
    with contextlib.suppress(OSError):
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(cache_dir / f"{key}.json", json.dumps(data).encode(), durable=False)


def copy_tree(source: Path, dest: Path) -> None:
    # cp -a keeps modes and links and never follows them; it is several times faster than
    # a Python walk on large trees.
    proc = subprocess.run(["cp", "-a", "--", str(source), str(dest)], capture_output=True, check=False)
    if proc.returncode != 0:
        raise UsageError(
            f"could not make the base copy for the proof: {proc.stderr.decode('utf-8', 'replace').strip()}; "
            "free some disk space and retry verification"
        )
