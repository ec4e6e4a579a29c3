"""Shared by the proof tests: write a small project, run a command through the task's
runner (autocode.sandbox.run) plain and instrumented, and read the report."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from autocode import sandbox
from autocode.proof import frameworks
from autocode.proof.results import Report

_TIMING = re.compile(r"\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds)\b|\(\d+(?:\.\d+)?ms\)|duration_ms [\d.]+|finished in [\d.]+s")


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def run(argv: list[str], project: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 240, writable: list[Path] | None = None) -> sandbox.Outcome:
    return sandbox.run(argv, copy=project, workspace=project, cwd=cwd or project, timeout=timeout,
                       cancelled=lambda: False, env=env, writable=writable or ())


def instrumented(argv: list[str], project: Path, report_dir: Path, *, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> tuple[Report, sandbox.Outcome, frameworks.Instrumented]:
    inst = frameworks.instrument(argv, framework=None, report_dir=report_dir, project=project, cwd=cwd)
    assert inst is not None, argv
    # The report folder is outside the project, as the task's scratch folder is: the sandbox
    # lets the run write there only when told (autocode.proof.run passes it the same way).
    outcome = run(inst.argv, project, cwd=inst.cwd, env={**(env or {}), **inst.env}, writable=[report_dir])
    report = frameworks.read_report(inst, report_dir=report_dir, output=outcome.output, project=project)
    return report, outcome, inst


def outcomes(report: Report) -> dict[str, str]:
    assert report.results is not None, report.reason
    return {r.id: r.outcome for r in report.results}


def same_output(a: str, b: str) -> bool:
    def norm(text: str) -> list[str]:
        return [_TIMING.sub("T", line).rstrip() for line in text.splitlines() if line.strip()]
    return norm(a) == norm(b)
