"""`autocode unattended -- COMMAND ...`: run a command on behalf of automation, with no person present.

The wrapper marks the process (and its children) unattended through
AUTOCODE_UNATTENDED=1; operator-only commands refuse to run that way
(exit 3), so automation can never, say, make a project forget what its
people taught it.
"""

from __future__ import annotations

import argparse
import os

from autocode.cli import main

ENV_VAR = "AUTOCODE_UNATTENDED"


def is_unattended() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def refuse_if_unattended(command: str) -> None:
    """Raise RefusedError (exit 3) when an operator-only command runs unattended."""
    if is_unattended():
        # lazy: not needed by `autocode --help`, which imports this module
        from autocode.errors import RefusedError

        raise RefusedError(
            f"`autocode {command}` is operator-only and refuses to run unattended "
            f"({ENV_VAR} is set or the unattended wrapper is in use); a person must run it directly",
            data={"command": command},
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the autocode command to run"
    )


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError

    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("name the command to run: autocode unattended -- COMMAND [ARGS...]")
    os.environ[ENV_VAR] = "1"
    # Operator-only commands check the mark themselves (so direct use of the variable counts too).
    return main(argv)
