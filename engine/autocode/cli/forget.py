"""`autocode forget`: remove the learned project record, and nothing else (operator-only)."""

from __future__ import annotations

import argparse
from typing import Any

from autocode.cli._common import add_json_flag, add_workspace_flag, emit
from autocode.cli.unattended import refuse_if_unattended


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_flag(parser)
    add_json_flag(parser)


def _render(data: dict[str, Any]) -> str:
    if data["removed"]:
        return f"Removed {data['path']}. Settings, runs, evidence and approvals are unchanged."
    return f"No learned record at {data['path']}; nothing to remove."


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.record import forget_record

    refuse_if_unattended("forget")
    result = forget_record(args.workspace)
    emit(args, result.to_dict(), _render)
    return 0
