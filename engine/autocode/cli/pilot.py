"""`autocode pilot-prep`: checked prep copy and preflight, then start the task (the coordinator).

It starts the task and reports; it never answers questions, approves the plan
or completes the task. A bad or mismatched input exits 2 before any provider
runs or any task-run directory exists.
"""

from __future__ import annotations

import argparse
from typing import Any

from autocode.cli._common import add_json_flag, emit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", required=True, metavar="PATH", help="the repository")
    parser.add_argument("--manifest", required=True, metavar="FILE", help="JSON manifest of declared public inputs")
    parser.add_argument("--brief", required=True, metavar="FILE", help="file holding the task brief")
    parser.add_argument("--report", required=True, metavar="FILE", help="where to write the JSON report")
    parser.add_argument("--scenario", metavar="NAME|FILE", help="fixture provider scenario (default here: the built-in 'pilot', which asks nothing)")
    parser.add_argument("--provider", choices=("fixture", "openai"), help="model provider for every role")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.tasks import TaskOptions
    from autocode.tasks.coordinator import pilot_prep

    options = TaskOptions(scenario=args.scenario, provider=args.provider)
    report = pilot_prep(args.workspace, args.manifest, args.brief, args.report, options=options)
    emit(args, report, _render)
    return 0


def _render(report: dict[str, Any]) -> str:
    task = report["task"]
    return "\n".join(
        [
            f"checked copy: {report['copy']} (HEAD {report['head']})",
            f"inputs: {len(report.get('inputs') or [])} verified",
            f"task {task['id']}: {task['state']}, needs {task['needs']['kind']}",
            f"run directory: {task['run_dir']}",
            f"report: {report.get('report_path', '')}".rstrip(": "),
        ]
    )
