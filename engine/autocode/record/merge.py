"""Merging a completed run's facts and a person's answers into the learned record.

The merge runs under a lock beside the record and writes atomically, so
concurrent completions never lose each other's conventions and a writer
killed mid-way leaves the previous record intact. Every value is scrubbed
before it can reach the file: a credential-shaped or machine-specific value
is omitted whole and reported by field name, never quoted or rewritten.
Nothing here raises into the caller: learning must never make a completed
task fail.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from autocode import scrub
from autocode.atomic import TMP_SUFFIX
from autocode.record.gitignore import ensure_gitignore
from autocode.record.load import load_record_file
from autocode.record.location import (
    AUTOCODE_DIR,
    LOCK_NAME,
    checked_folder,
    record_path,
    workspace_root,
)
from autocode.record.schema import (
    MAX_ANSWER,
    MAX_CONVENTIONS,
    MAX_FRAMEWORK,
    MAX_MODEL,
    MAX_PAUSE_STATE,
    MAX_PAUSE_STATES,
    MAX_PROVIDER,
    MAX_QUESTION,
    MAX_ROLE,
    MAX_ROUTES,
    MAX_TEST_COMMAND,
    RECORD_VERSION,
    Convention,
    ProjectRecord,
    Route,
)

_T = TypeVar("_T")

LOCK_TIMEOUT_S = 30.0
LAST_MERGE_NAME = "last-merge.json"


@dataclass(frozen=True)
class ObservedFacts:
    """What a run observed. None means unknown: it never erases what an earlier run learned.

    `routes` holds `Route`s (or their text form "role=provider:model").
    """

    framework: str | None = None
    test_command: str | None = None
    routes: Sequence[Route | str] = ()
    human_pause_states: Sequence[str] = ()


@dataclass(frozen=True)
class MergeResult:
    written: bool
    path: Path
    omitted: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "path": str(self.path),
            "omitted": list(self.omitted),
            "errors": list(self.errors),
        }


# A generated Python suite run through an interpreter path (a virtualenv's
# python, python3.11 ...) is stored with the portable `python3` launcher.
_PYTHON_LAUNCHER = re.compile(
    r"^\s*(?:\S*[/\\])?python(?:\d+(?:\.\d+)*)?(?:\.exe)?(?=\s+-m\s+(?:pytest|unittest)(?:\s|$))"
)


def portable_test_command(command: str) -> str:
    """`command` with a known Python suite's interpreter replaced by `python3`."""
    return _PYTHON_LAUNCHER.sub("python3", command, count=1)


# Everyone who clones the repository gets the learned test command, so an
# absolute path in it must exist on every machine: only the usual program
# folders and /dev/null qualify. Anything else (`/srv/app`, `/opt/ci/run`,
# `D:\tools\run.bat`) names this machine's layout and the command is omitted.
# A URL's `://` starts no path (a `file://` URL's does); `html:/srv/cov` does.
_ABSOLUTE_PATH = re.compile(
    r"(?:(?<![\w.~$}/:\\\-])|(?<=:)(?!//)|(?<=file://))/[^\s\"'`;|&()<>]+"
    r"|(?<![\w.~$}/:\\\-])(?:[A-Za-z]:[\\/][^\s\"'`;|&()<>]*|\\\\[^\s\"'`;|&()<>]+)"
)
_SHARED_PROGRAM_PATH = re.compile(r"/(?:usr/(?:local/)?)?s?bin/[\w.+\-]+|/dev/(?:null|stdin|stdout|stderr)")


def foreign_path_in_command(command: str) -> bool:
    """Whether `command` names an absolute path that other machines may not have."""
    return any(
        _SHARED_PROGRAM_PATH.fullmatch(match.group()) is None for match in _ABSOLUTE_PATH.finditer(command)
    )


@dataclass
class _Scrubber:
    root: Path
    env: Mapping[str, str] | None
    omitted: list[str] = field(default_factory=list)

    def shareable(self, name: str, value: object, limit: int) -> str | None:
        """`value` if it is a shareable string within `limit`, else None (and `name` noted)."""
        if not isinstance(value, str) or not value.strip():
            self.omitted.append(f"{name}: not a non-empty string")
            return None
        if len(value) > limit:
            self.omitted.append(f"{name}: longer than {limit} characters")
            return None
        if scrub.contains_secret(value, env=self.env):
            self.omitted.append(f"{name}: credential-shaped value")
            return None
        if scrub.contains_machine_path(value, workspace=self.root):
            self.omitted.append(f"{name}: machine-specific path")
            return None
        return value

    def newest(self, name: str, items: list[_T], limit: int) -> list[_T]:
        """The last `limit` of `items` (oldest first); the number dropped is noted under `name`."""
        dropped = len(items) - limit
        if dropped <= 0:
            return items
        self.omitted.append(f"{name}: {dropped} oldest entries dropped (limit {limit})")
        return items[dropped:]


def _field(item: object, name: str) -> object:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _merge_conventions(
    base: Sequence[Convention], answers: Sequence[Convention], scrubber: _Scrubber
) -> list[Convention]:
    merged: dict[str, Convention] = {c.question: c for c in base}
    for index, answer in enumerate(answers):
        question = scrubber.shareable(f"conventions[{index}].question", _field(answer, "question"), MAX_QUESTION)
        if question is None:
            continue
        text = scrubber.shareable(f"conventions[{index}].answer", _field(answer, "answer"), MAX_ANSWER)
        if text is None:
            continue
        # A new human answer replaces the same question in place; others append.
        merged[question] = Convention(question=question, answer=text)
    return scrubber.newest("conventions", list(merged.values()), MAX_CONVENTIONS)


def _route_parts(route: object) -> object:
    """A Route, a mapping, or the text form "role=provider:model"."""
    if isinstance(route, str):
        role, _, target = route.partition("=")
        provider, _, model = target.partition(":")
        return {"role": role, "provider": provider, "model": model or None}
    return route


def _merge_routes(base: Sequence[Route], observed: Sequence[Route | str], scrubber: _Scrubber) -> list[Route]:
    merged: dict[str, Route] = {r.role: r for r in base}
    for index, given in enumerate(observed):
        route = _route_parts(given)
        role = scrubber.shareable(f"routes[{index}].role", _field(route, "role"), MAX_ROLE)
        provider = scrubber.shareable(f"routes[{index}].provider", _field(route, "provider"), MAX_PROVIDER)
        model = scrubber.shareable(f"routes[{index}].model", _field(route, "model"), MAX_MODEL)
        if role is None or provider is None or model is None:
            continue
        merged.pop(role, None)
        merged[role] = Route(role=role, provider=provider, model=model)
    return scrubber.newest("routes", list(merged.values()), MAX_ROUTES)


def _merge_pause_states(base: Sequence[str], observed: Sequence[str], scrubber: _Scrubber) -> list[str]:
    result = list(base)
    for index, state in enumerate(observed):
        name = scrubber.shareable(f"human_pause_states[{index}]", state, MAX_PAUSE_STATE)
        if name is None or name in result:
            continue
        if len(result) >= MAX_PAUSE_STATES:
            scrubber.omitted.append(f"human_pause_states[{index}]: limit of {MAX_PAUSE_STATES} reached")
            continue
        result.append(name)
    return result


def _merged_record(
    base: ProjectRecord,
    observed: ObservedFacts,
    answers: Sequence[Convention],
    package: bool,
    scrubber: _Scrubber,
) -> ProjectRecord:
    framework, test_command = base.framework, base.test_command
    # The record describes the whole repository: a --package run keeps its hands off these two.
    if not package:
        if observed.framework is not None:
            framework = scrubber.shareable("framework", observed.framework, MAX_FRAMEWORK)
        if observed.test_command is not None:
            command = observed.test_command
            if isinstance(command, str):
                command = portable_test_command(command)
            test_command = scrubber.shareable("test_command", command, MAX_TEST_COMMAND)
            if test_command is not None and foreign_path_in_command(test_command):
                scrubber.omitted.append("test_command: absolute path outside the repository")
                test_command = None
    return ProjectRecord.model_validate(
        {
            "version": RECORD_VERSION,
            "framework": framework,
            "test_command": test_command,
            "conventions": _merge_conventions(base.conventions, answers, scrubber),
            "routes": _merge_routes(base.routes, observed.routes or (), scrubber),
            "human_pause_states": _merge_pause_states(
                base.human_pause_states, observed.human_pause_states or (), scrubber
            ),
        }
    )


def record_bytes(record: ProjectRecord) -> bytes:
    """The file's text: one key per line and one list entry per line, so that reviews and git
    diffs show exactly which convention changed (and the C JSON encoder does the work)."""

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = ["{"]
    items = list(record.to_json_dict().items())
    for index, (key, value) in enumerate(items):
        comma = "," if index < len(items) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"  {dump(key)}: [")
            lines += [f"    {dump(entry)}{',' if n < len(value) - 1 else ''}" for n, entry in enumerate(value)]
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {dump(key)}: {dump(value)}{comma}")
    lines.append("}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _note_last_merge(folder: Path, omitted: Sequence[str]) -> None:
    """Keep what the last merge omitted (field names only) for doctor; a local, ignored file.

    Nothing is written while there is nothing to say, so the common merge costs no extra file.
    """
    # lazy: not needed by the server's first memory save, which imports this module
    from autocode.atomic import write_atomically

    path = folder / LAST_MERGE_NAME
    if not omitted and not path.exists():
        return
    data = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "omitted": list(omitted)}
    write_atomically(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"), durable=False)


def last_merge_omitted(workspace: Path | str) -> dict[str, Any] | None:
    """What the last merge omitted, as noted beside the record, or None."""
    path = workspace_root(workspace) / AUTOCODE_DIR / LAST_MERGE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("omitted"), list):
        return None
    return {"at": str(data.get("at", "")), "fields": [str(item) for item in data["omitted"]]}


def _remove_stale_temp_files(folder: Path) -> None:
    """Temp files of a writer killed before its rename; only the lock holder writes them, so any
    found while holding the lock are stale."""
    for stale in folder.glob(f".project.json.*{TMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            stale.unlink()


def _merge_locked(
    root: Path,
    observed: ObservedFacts,
    answers: Sequence[Convention],
    package: bool,
    env: Mapping[str, str] | None,
    lock_timeout: float,
) -> MergeResult:
    # lazy: not needed by the server's first memory save, which imports this module
    from filelock import FileLock, Timeout

    from autocode.atomic import write_atomically

    path = record_path(root)
    if not root.is_dir():
        return MergeResult(False, path, (), (f"workspace {root} is not a directory; nothing was written",))
    scrubber = _Scrubber(root, env)
    folder = checked_folder(root, create=True)
    ensure_gitignore(root, check_hidden=False)
    try:
        with FileLock(folder / LOCK_NAME, timeout=lock_timeout):
            _remove_stale_temp_files(folder)
            current = load_record_file(path)
            if current.status == "missing":
                base = ProjectRecord(version=1)
            elif current.status == "valid" and current.record is not None:
                base = current.record
            else:
                reason = "; ".join(current.problems) or current.status
                return MergeResult(
                    False,
                    path,
                    (),
                    (
                        f"the existing record is {current.status} ({reason}) and was left untouched; "
                        "fix it, or run `autocode forget` so a later task can start a new one",
                    ),
                )
            merged = _merged_record(base, observed, answers, package, scrubber)
            omitted = tuple(scrubber.omitted)
            _note_last_merge(folder, omitted)
            # Nothing new (or nothing at all to start a record with): leave the disk alone.
            if merged == base:
                return MergeResult(False, path, omitted, ())
            write_atomically(path, record_bytes(merged))
            return MergeResult(True, path, omitted, ())
    except Timeout:
        return MergeResult(
            False,
            path,
            tuple(scrubber.omitted),
            (f"another AutoCode process held {LOCK_NAME} for over {lock_timeout:g} s; the record was not updated",),
        )


def merge_record(
    workspace: Path | str,
    observed: ObservedFacts,
    answers: Sequence[Convention],
    package: bool = False,
    *,
    env: Mapping[str, str] | None = None,
    lock_timeout: float = LOCK_TIMEOUT_S,
) -> MergeResult:
    """Merge `observed` facts and human `answers` into the workspace's record. Never raises.

    `env` is the environment whose credential variables are scrubbed (default: this process's).
    """
    path = record_path(Path(workspace))
    try:
        root = workspace_root(workspace)
        path = record_path(root)
        return _merge_locked(root, observed, answers, package, env, lock_timeout)
    except Exception as exc:
        return MergeResult(False, path, (), (f"the record was not updated: {_describe_error(exc)}",))


def _describe_error(exc: Exception) -> str:
    """An error's kind and message, without echoing input values (a validation error would)."""
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return f"{type(exc).__name__}: {exc}"
