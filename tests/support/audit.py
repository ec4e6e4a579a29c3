"""Proof that nothing outside the workspace is read: an audit hook records every
file/folder open and every child process started while a recorder is active, and
`only_inside` then checks each against the allowed folders."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

Event = tuple[str, object, object]
_RECORDING: list[list[Event]] = []
_REPO = str(Path(__file__).resolve().parents[2])


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _RECORDING and event in ("open", "os.listdir", "os.scandir", "subprocess.Popen"):
        popen = event == "subprocess.Popen"
        _RECORDING[-1].append((event, args[1] if popen else args[0], args[2] if popen else None))


sys.addaudithook(_audit)


@contextmanager
def only_inside(*allowed: Path) -> Iterator[list[Event]]:
    """Fail unless every open is inside `allowed` (or the interpreter) and git runs only there."""
    events: list[Event] = []
    _RECORDING.append(events)
    try:
        yield events
    finally:
        _RECORDING.pop()
    check_events(events, *allowed)


def check_events(events: list[Event], *allowed: Path) -> None:
    """Fail unless every recorded open is inside `allowed` (or the interpreter) and git runs only there."""
    roots = [str(p.resolve()) for p in allowed]
    runtime = [sys.prefix, sys.base_prefix, _REPO]
    for event, target, cwd in events:
        if event == "subprocess.Popen":
            if cwd is None and list(target)[1:] == ["--version"]:  # type: ignore[call-overload]
                continue  # the version check reads no repository
            if list(target)[:3] == [sys.executable, "-I", "-S"]:  # type: ignore[call-overload]
                continue  # the prep copy's second process: its own opens are audited on their own
            assert any(str(Path(str(cwd)).resolve()).startswith(r) for r in roots), (event, cwd)
            continue
        if isinstance(target, int):
            continue  # a descriptor already opened (and checked) earlier
        text = os.fsdecode(target) if isinstance(target, (str, bytes)) else str(target)
        assert ".." not in text.split("/"), (event, text)
        if text.startswith("/"):
            resolved = os.path.realpath(text)
            if text in ("/dev/null", "/proc/self/status"):
                continue  # child stdin; the copier reading its own umask
            assert any(resolved.startswith(r) for r in [*roots, *runtime]), (event, text)
        else:
            assert text not in ("etc", "passwd"), (event, text)
