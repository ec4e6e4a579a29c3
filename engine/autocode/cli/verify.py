"""`autocode verify`: prove a change AutoCode did not make (the work tree, a range, a branch)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from autocode.cli._common import add_json_flag, emit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", metavar="PATH", default=".", help="the repository (default: here)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--range", dest="revisions", metavar="A..B", help="the commits from A (base) to B")
    which.add_argument("--branch", metavar="NAME", help="a branch, against its merge base with HEAD")
    parser.add_argument("--test-command", metavar="CMD", help="the test command for this run only (never learned)")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.proof.change import verify_change

    def progress(message: str) -> None:
        sys.stderr.write(f"autocode: {message}\n")

    data = verify_change(
        args.workspace, revisions=args.revisions, branch=args.branch, test_command=args.test_command,
        progress=None if args.json else progress,
    )
    emit(args, _wire(data) if args.json else data, _render)
    return 0 if data.get("status") == "verified" else 1


def _wire(data: dict[str, Any]) -> dict[str, Any]:
    """The verdict in the wire's camelCase, as `task show --json` carries a proof; the evidence
    file proof.json keeps the engine's own form."""
    # lazy: the typed proof of the task models, only for --json
    from autocode.tasks.models import Proof

    head: dict[str, Any] = {k: data[k] for k in ("change", "files", "evidence") if k in data}
    rest = {k: v for k, v in data.items() if k not in head}
    return {**head, **Proof.model_validate(rest).wire()}


def _render(data: dict[str, Any]) -> str:
    # lazy: the task command's renderer of a verdict
    from autocode.cli.task import proof_lines

    lines = [f"{data['change']}: {len(data['files'])} file(s) changed", *proof_lines(data)]
    lines.append(f"evidence: {data['evidence']}")
    return "\n".join(lines)
