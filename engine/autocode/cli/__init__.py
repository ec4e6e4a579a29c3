"""The `autocode` command: argument parsing and dispatch to one module per sub-command.

Sub-command modules import only the standard library at module level so that
`autocode --help` stays fast; engine imports happen inside their `run`.
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from collections.abc import Sequence

from autocode import __version__
from autocode.cli._common import run_command

# name -> (module, one-line help). Each module defines
# `add_arguments(parser)` and `run(args) -> int`.
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("autocode.cli.doctor", "show every setting with its origin, and the record's health"),
    "trust": ("autocode.cli.trust", "show the destinations a repository's files name, and trust them"),
    "forget": ("autocode.cli.forget", "remove the learned project record (.autocode/project.json)"),
    "prep": ("autocode.cli.prep", "make a checked prep copy of the workspace with declared inputs"),
    "pilot-prep": ("autocode.cli.pilot", "checked copy + preflight, then start a task (coordinator)"),
    "task": ("autocode.cli.task", "start and drive coding tasks"),
    "memory": ("autocode.cli.memory", "agent and team memories"),
    "verify": ("autocode.cli.verify", "prove a change with the project's tests in a fresh copy (exit 0 only if verified)"),
    "unattended": ("autocode.cli.unattended", "run an autocode command for automation (no person present)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autocode",
        description="Run AI coding tasks in your git repository.",
    )
    parser.add_argument("--version", action="version", version=f"autocode {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def _tolerant_output() -> None:
    """File names that are not UTF-8 (latin-1 bytes kept by surrogateescape) are printed as the
    bytes they are, and text the terminal cannot show is escaped, instead of a crash mid-report."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            utf8 = stream.encoding.lower().replace("-", "") == "utf8"
            stream.reconfigure(errors="surrogateescape" if utf8 else "backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
