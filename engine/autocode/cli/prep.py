"""`autocode prep`: make a checked prep copy of a workspace, with optional declared inputs;
`autocode prep prune`: remove the copies and staging folders no task in progress uses."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import IO, Any

from autocode.cli._common import add_json_flag, add_workspace_flag, emit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=["prune"],
        help="prune: remove prep copies and staging folders no task in progress uses "
        "(the newest keep_prep_copies finished ones stay)",
    )
    add_workspace_flag(parser)
    parser.add_argument(
        "--keep", type=int, metavar="N", help="with prune: finished copies to keep (default: keep_prep_copies)"
    )
    parser.add_argument(
        "--manifest",
        metavar="PATH",
        help="JSON manifest of declared inputs ({\"inputs\": [{path, type, mode, size, sha256}]})",
    )
    parser.add_argument("--report", metavar="PATH", help="also write the JSON report to this file")
    add_json_flag(parser)


class ProgressBar:
    """A one-line bar on a terminal, shown only once a copy has taken more than a moment."""

    DELAY = 0.5  # seconds a copy runs before the bar appears

    def __init__(self, stream: IO[str], delay: float | None = None) -> None:
        self.stream = stream
        self.delay = self.DELAY if delay is None else delay
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.shown and time.monotonic() - self.started < self.delay:
            return
        self.shown = True
        width = 30
        filled = width * done // total if total else width
        self.stream.write(f"\rcopying [{'#' * filled}{'.' * (width - filled)}] {done}/{total} entries")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _render(data: dict[str, Any]) -> str:
    counts = data["counts"]
    lines = [
        f"Prep copy: {data['copy']}",
        f"HEAD: {data['head'] or '(no commit yet)'}",
        f"Copied: {counts['files']} files, {counts['symlinks']} links, "
        f"{counts['emptyFolders']} empty submodule folders, {counts['bytes']} bytes",
    ]
    excluded = counts.get("excluded") or {}
    if excluded:
        lines.append("Left out: " + ", ".join(f"{k} {v}" for k, v in excluded.items()))
    for item in data["inputs"]:
        lines.append(f"Input verified in workspace and copy: {item['path']} sha256={item['sha256']}")
    if data.get("report"):
        lines.append(f"Report: {data['report']}")
    return "\n".join(lines)


def _check_report_path(report: str, workspace: str) -> None:
    """Refuse an unusable --report before any copy is made."""
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError

    path = Path(report)
    if path.is_symlink() or path.is_dir() or (path.exists() and not path.is_file()):
        raise UsageError(f"--report {path} is not a regular file path; pass a new or existing plain file")
    # The workspace's own .autocode folder is created by the copy itself.
    own_folder = path.parent.resolve() == Path(workspace).resolve() / ".autocode"
    if not path.parent.is_dir() and not own_folder:
        raise UsageError(f"--report {path}: the folder {path.parent} does not exist; create it or pick another path")


def _render_prune(data: dict[str, Any]) -> str:
    lines = [f"Removed {len(data['removed'])} prep folder(s), {data['freedBytes']} bytes freed"]
    lines += [f"  removed {name}" for name in data["removed"]]
    lines += [f"  kept {name} (keep_prep_copies)" for name in data["kept"]]
    lines += [f"  in use {name}" for name in data["inUse"]]
    lines += [f"  left {name} (made in the last minute; a task may be about to use it)" for name in data["recent"]]
    return "\n".join(lines)


def _prune(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.errors import UsageError
    from autocode.prep.retention import prune_workspace

    if args.manifest or args.report:
        raise UsageError("prep prune takes no --manifest or --report")
    if args.keep is not None and args.keep < 0:
        raise UsageError(f"--keep {args.keep}: give 0 or more finished copies to keep")
    emit(args, prune_workspace(args.workspace, args.keep), _render_prune)
    return 0


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.prep import make_prep_copy, write_report

    if args.action == "prune":
        return _prune(args)
    if args.keep is not None:
        # lazy: not needed by `autocode --help`, which imports this module
        from autocode.errors import UsageError

        raise UsageError("--keep is for `autocode prep prune`")
    if args.report:
        _check_report_path(args.report, args.workspace)
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    try:
        result = make_prep_copy(args.workspace, args.manifest, bar)
    finally:
        if bar is not None:
            bar.close()
    data = result.to_dict()
    if args.report:
        data["report"] = str(write_report(result, args.report))
    emit(args, data, _render)
    return 0
