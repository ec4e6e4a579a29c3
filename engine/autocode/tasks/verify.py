"""Verification in the prep copy: the project's tests, and the change as files and diffs.

The implementing step applies the implementer's diff to the copy (or takes the
agent loop's edits), saves each touched file's merge base first, and writes the
change against HEAD; the verifying step runs the test command there with a
time limit and a cancel check. Nothing here touches the person's work tree.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode import diffnames, gitsafe
from autocode.errors import AutoCodeError, UsageError
from autocode.private import private_folder
from autocode.tasks import store

if TYPE_CHECKING:
    from autocode.sandbox.policy import Policy

OUTPUT_TAIL = 8000

def _outside_repo_env(directory: Path) -> dict[str, str]:
    # The copy lives inside the workspace; stop git from finding the workspace's
    # repository above it so paths in the patch are taken relative to the copy.
    return {"GIT_CEILING_DIRECTORIES": str(directory.parent)}


def _copy_git(args: list[str], copy: Path) -> subprocess.CompletedProcess[bytes]:
    is_root = (copy / ".git").exists()
    return gitsafe.run(args, copy, check=False, env=None if is_root else _outside_repo_env(copy))


def capture_base(
    copy: Path, files: list[str], dest: Path, *, before: Mapping[str, str | None] | None = None
) -> None:
    """Save the copy's version of each file the change touches (the merge base), before it changes.

    `before`: the first content of files already changed in the copy (the agent loop records
    each file as it found it before its first edit); other files are read from the copy."""
    index: dict[str, str | None] = {}
    private_folder(dest)
    for n, rel in enumerate(files):
        source = copy / rel
        data: bytes | None
        if before is not None and rel in before:
            text = before[rel]
            data = None if text is None else text.encode("utf-8", "surrogateescape")
        elif source.is_file() and not source.is_symlink():
            data = source.read_bytes()
        else:
            data = None
        if data is not None:
            name = f"{n:05d}"
            # The run's own evidence: 0700 folders and 0600 files whatever the umask (store.py).
            private_folder(dest / "files")
            store.write_bytes_atomic(dest / "files" / name, data, durable=False)
            index[rel] = name
        else:
            index[rel] = None
    store.write_json_atomic(dest / "index.json", {"files": index})


def base_files(base: Path) -> dict[str, bytes | None]:
    """The base's bytes of each file the change touches, as `capture_base` saved them (None: absent)."""
    try:
        index = store.read_json(base / "index.json").get("files") or {}
    except (FileNotFoundError, ValueError):
        return {}
    out: dict[str, bytes | None] = {}
    for rel, name in dict(index).items():
        out[str(rel)] = (base / "files" / str(name)).read_bytes() if name else None
    return out


def agent_originals(run_dir: Path) -> dict[str, str | None]:
    """What the agent loop found in each file before its first edit (its own record)."""
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.providers.agent import AGENT_DIR

    try:
        data = store.read_json(run_dir / AGENT_DIR / "originals.json")
    except (FileNotFoundError, ValueError):
        return {}
    return {str(k): (v if isinstance(v, str) else None) for k, v in dict(data).items()}


def apply_in_copy(copy: Path, diff_path: Path) -> None:
    proc = _copy_git(["apply", "--whitespace=nowarn", str(diff_path)], copy)
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise AutoCodeError(
            f"the change does not apply to the prep copy: {message}", kind="patchDoesNotApply"
        )


def patch_already_applied(copy: Path, diff_path: Path) -> bool:
    return _copy_git(["apply", "--reverse", "--check", str(diff_path)], copy).returncode == 0


def diff_files(diff: str) -> list[str]:
    """The paths a diff touches, git's quoted names read back (`autocode.diffnames`)."""
    return diffnames.diff_paths(diff)


def changed_files(copy: Path, files: list[str], base: Path) -> list[str]:
    """Of `files`, those whose content in the copy differs from the base `capture_base` saved
    in `base` (a file made or removed counts). An empty answer: the change changed nothing."""
    try:
        index = dict(store.read_json(base / "index.json").get("files", {}))
    except (FileNotFoundError, ValueError):
        return list(files)  # no saved base to compare with: take the diff's word
    out: list[str] = []
    for rel in files:
        entry = index.get(rel, "missing")
        if entry == "missing":
            out.append(rel)
            continue
        target = copy / rel
        now = target.read_bytes() if target.is_file() and not target.is_symlink() else None
        was = (base / "files" / entry).read_bytes() if entry else None
        if now != was:
            out.append(rel)
    return out


def diff_against_head(workspace: Path, copy: Path, files: list[str], head: str | None) -> str:
    """The copy's version of each changed file against HEAD (includes the person's uncommitted edits)."""
    chunks: list[str] = []
    for rel in files:
        old: str | None = None
        if head:
            proc = gitsafe.run(["show", f"{head}:{rel}"], workspace, check=False)
            if proc.returncode == 0:
                old = proc.stdout.decode("utf-8", "surrogateescape")
        target = copy / rel
        new = target.read_text(encoding="utf-8", errors="surrogateescape") if target.is_file() else None
        chunks.append(diffnames.file_diff(rel, old, new))
    return "".join(chunks)


def run_tests(
    command: str,
    cwd: Path,
    timeout: float,
    cancelled: Callable[[], bool],
    *,
    copy: Path | None = None,
    workspace: Path | None = None,
    policy: Policy | None = None,
    output_file: Path | None = None,
    on_output: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The test command in the copy, through the task's one runner (autocode.sandbox).

    `policy`: the task's `sandbox.Policy` (the strict default when None); `output_file` and
    `on_output` receive the output as it comes. The result's `sandbox` says what confined it."""
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode import sandbox

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"the test command {command!r} cannot be split into words: {exc}") from exc
    if not argv:
        raise UsageError("the test command is empty; set test_command in .autocode/config.toml")
    outcome = sandbox.run(
        argv,
        copy=copy or cwd,
        workspace=workspace or cwd,
        cwd=cwd,
        timeout=timeout,
        cancelled=cancelled,
        policy=policy,
        output_file=output_file,
        on_output=on_output,
    )
    return {
        "command": command,
        "cwd": cwd.name,
        "exit_code": outcome.exit_code,
        "status": outcome.status,
        "seconds": outcome.seconds,
        "sandbox": outcome.sandbox,
        "sandbox_notes": list(outcome.notes),
        "output": outcome.output,
        "output_tail": outcome.output[-OUTPUT_TAIL:],
    }
