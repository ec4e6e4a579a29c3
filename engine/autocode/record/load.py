"""Loading `.autocode/project.json` into one of five statuses, never raising.

Anything but `valid` is reported (with the problems found) and ignored by
its callers: a broken record never becomes a default and never blocks a task.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from autocode.record.location import record_path, workspace_root
from autocode.record.schema import MAX_FILE_BYTES, RECORD_VERSION, ProjectRecord

Status = Literal["valid", "missing", "unavailable", "invalid", "unsupported"]
STATUSES: tuple[Status, ...] = ("valid", "missing", "unavailable", "invalid", "unsupported")


@dataclass(frozen=True)
class RecordLoad:
    status: Status
    path: Path
    problems: tuple[str, ...] = ()
    record: ProjectRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "path": str(self.path),
            "problems": list(self.problems),
            "data": self.record.to_json_dict() if self.record is not None else None,
        }


class _DuplicateKey(ValueError):
    pass


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"key {key!r} appears more than once in one object")
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _describe_location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def parse_record_bytes(raw: bytes) -> tuple[Status, list[str], ProjectRecord | None]:
    """Classify raw file content; the status is never `missing` or `unavailable`."""
    if len(raw) > MAX_FILE_BYTES:
        return "invalid", [f"the file is {len(raw)} bytes; the limit is {MAX_FILE_BYTES}"], None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid", [f"the file is not UTF-8 (byte {exc.start})"], None
    try:
        data = json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return "invalid", [f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"], None
    except (ValueError, RecursionError) as exc:
        return "invalid", [f"not valid JSON: {exc}"], None
    if not isinstance(data, dict):
        return "invalid", [f"the top level must be a JSON object, not {type(data).__name__}"], None
    version = data.get("version")
    if "version" not in data:
        return "invalid", ["version: the field is missing"], None
    if type(version) is not int:
        return "invalid", [f"version: must be the integer {RECORD_VERSION}"], None
    if version != RECORD_VERSION:
        return (
            "unsupported",
            [f"version {version} is not supported by this AutoCode (it reads version {RECORD_VERSION})"],
            None,
        )
    try:
        record = ProjectRecord.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_describe_location(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
        return "invalid", problems, None
    except RecursionError:
        return "invalid", ["the JSON is nested too deeply"], None
    return "valid", [], record


def _read_regular_file(path: Path) -> bytes:
    """Read at most one byte past the size limit; refuse FIFOs, devices and directories."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular(path)
        chunks: list[bytes] = []
        remaining = MAX_FILE_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class _NotRegular(OSError):
    pass


def load_record_file(path: Path) -> RecordLoad:
    """Load the record at exactly `path`."""
    try:
        raw = _read_regular_file(path)
    except (FileNotFoundError, NotADirectoryError):
        return RecordLoad("missing", path)
    except IsADirectoryError:
        return RecordLoad("unavailable", path, (f"{path.name} is a directory, not a file",))
    except _NotRegular:
        return RecordLoad("unavailable", path, (f"{path.name} is not a regular file",))
    except OSError as exc:
        return RecordLoad("unavailable", path, (f"cannot read the file: {exc.strerror or exc}",))
    status, problems, record = parse_record_bytes(raw)
    return RecordLoad(status, path, tuple(problems), record)


def load_record(workspace: Path | str) -> RecordLoad:
    """Load the learned record of `workspace` (or of the workspace it is a prep copy or worktree of)."""
    return load_record_file(record_path(workspace_root(workspace)))
