"""`autocode pilot`: placeholder until its issue lands (see COMMANDS in cli/__init__.py)."""

from __future__ import annotations

import argparse

from autocode.cli._common import add_json_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from autocode.errors import AutoCodeError

    raise AutoCodeError("this command is not built yet", kind="notImplemented", exit_code=2)
