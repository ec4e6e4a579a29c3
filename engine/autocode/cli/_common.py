"""Helpers every sub-command shares: `--json` output and turning errors into exit codes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def add_workspace_flag(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--workspace",
        required=required,
        metavar="PATH",
        help="the repository to work on",
    )


def emit(args: argparse.Namespace, data: Any, render: Callable[[Any], str]) -> None:
    """Print `data` as JSON with --json, else as the text `render` makes of it."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    else:
        text = render(data)
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed sub-command; an AutoCodeError becomes its message and exit code."""
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import AutoCodeError, fault_error
    from autocode.extensions import load as load_extensions

    try:
        try:
            load_extensions()  # the modules AUTOCODE_EXTENSIONS names add their registry entries
            code: int = args._run(args)
            return code
        except (OSError, RecursionError) as fault:
            # A full, read-only or protected disk is the person's to fix: exit 2 and the remedy.
            converted = fault_error(fault)
            if converted is None:
                raise
            raise converted from fault
    except AutoCodeError as exc:
        if getattr(args, "json", False):
            sys.stdout.write(json.dumps({"error": exc.to_dict()}, indent=2) + "\n")
        sys.stderr.write(f"autocode: {exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("autocode: interrupted\n")
        return 130
