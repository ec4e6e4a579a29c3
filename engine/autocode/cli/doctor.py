"""`autocode doctor`: every setting with its origin, the learned record's health, git."""

from __future__ import annotations

import argparse

from autocode.cli._common import add_json_flag, add_workspace_flag, emit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_flag(parser, required=False)
    add_json_flag(parser)
    parser.add_argument("--test-command", metavar="CMD", help="the test command flag, as a task would get it")
    parser.add_argument("--package", metavar="PATH", help="a package folder inside the workspace (monorepo)")


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.doctor import doctor_report, render_text

    flags = {"test_command": args.test_command}
    report = doctor_report(args.workspace or ".", flags=flags, package=args.package)
    emit(args, report.to_dict(), render_text)  # --json is the typed report's dump
    return 0
