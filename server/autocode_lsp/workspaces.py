"""Which folder a command works on: its own `workspace` argument, else the session's folders.

A session without any folder has no repository in context; commands that need
one fail with `noRepository` and say how to give one.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.exceptions import JsonRpcException

from autocode_lsp.errors import domain_error, from_engine, invalid_arguments
from autocode_lsp.pathmap import PathMapError, uri_path
from autocode_lsp.protocol import INVALID_PARAMS

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer

log = logging.getLogger("autocode_lsp")


def to_path(text: str, server: AutoCodeServer | None = None) -> Path:
    """A folder path from a path or a `file://` URI given by a client, in the server's names
    when the session maps paths across a container boundary (`--path-map`)."""
    if "://" in text:
        if not text.startswith("file:"):
            raise invalid_arguments(
                f"workspace {text!r} is not a file:// URI or a path; pass the folder's path"
            )
        raw = uri_path(text)
    else:
        raw = text
    path_map = getattr(server, "path_map", None)
    if path_map:
        try:
            raw = path_map.to_server(raw)
        except PathMapError as exc:
            err = invalid_arguments(str(exc))
            # Names both sides on purpose: the reply is not translated (see server._command).
            err.data = {**(err.data or {}), "pathMap": [list(p) for p in path_map.pairs]}
            raise err from None
    path = Path(raw)
    if not path.is_absolute():
        raise invalid_arguments(
            f"workspace {text!r} is relative; pass an absolute path or a file:// URI (an editor "
            "on another system, Windows included, needs a --path-map entry for its folders)"
        )
    return path


def session_folders(server: AutoCodeServer) -> list[Path]:
    """The session's workspace folders (initialize folders, later changes, else rootUri)."""
    try:
        ws = server.workspace
    except RuntimeError:  # not initialized yet
        return []
    folders: list[Path] = []
    for folder in ws.folders.values():
        try:
            folders.append(to_path(folder.uri, server))
        except Exception:  # a non-file folder (e.g. a virtual file system) has no repository
            continue
    if not folders and ws.root_path:
        with contextlib.suppress(Exception):
            folders.append(to_path(ws.root_path, server))
    return folders


def given_workspace(text: str, server: AutoCodeServer | None = None) -> Path:
    """The `workspace` argument as a folder, checked by the engine's one workspace check
    (`autocode.workspace.folder`: a missing folder, a file or a `.git` folder is `workspaceInvalid`)."""
    # lazy: not needed by the server's start, which imports this module
    from autocode.workspace import WorkspaceInvalid, folder

    path = to_path(text, server)
    try:
        folder(path)
    except WorkspaceInvalid as exc:
        raise from_engine(exc) from None
    return path


def resolve(server: AutoCodeServer, workspace: str | None, *, command: str) -> Path:
    """The one folder a command works on; fails with noRepository when there is none."""
    found = optional(server, workspace, command=command)
    if found is None:
        raise domain_error(
            "noRepository",
            f"{command} needs a repository, and this editor session has no workspace folder: "
            "open a folder (or pass `workspace` with the repository's path) and try again",
        )
    return found


def in_repository(folder: Path) -> bool:
    """Whether `folder` is inside a git work tree (a cheap look for `.git`, no git run)."""
    return any((candidate / ".git").exists() for candidate in (folder, *folder.parents))


def repository_folders(server: AutoCodeServer) -> list[Path]:
    """The session's folders that are git repositories; the others cannot hold a task and are
    left out (said once in the log), so an editor that sends every folder it knows still works."""
    folders = session_folders(server)
    repos = [f for f in folders if in_repository(f)]
    skipped = [f for f in folders if f not in repos]
    said = server.state.setdefault("skipped_folders", set())
    for folder in skipped:
        if folder not in said:
            said.add(folder)
            log.info("workspace folder %s is not a git repository; task commands leave it out", folder)
    return repos


def optional(server: AutoCodeServer, workspace: str | None, *, command: str) -> Path | None:
    """The folder a command works on, or None when the session has none: the `workspace`
    argument, else the only folder, else the only repository among the folders."""
    if workspace is not None:
        return given_workspace(workspace, server)
    folders = session_folders(server)
    if not folders:
        return None
    if len(folders) == 1:
        return folders[0]
    repos = repository_folders(server)
    if len(repos) == 1:
        return repos[0]
    names = ", ".join(str(f) for f in (repos or folders))
    which = "repositories" if repos else "workspace folders, none of them a git repository"
    raise invalid_arguments(
        f"{command}: this session has {len(repos or folders)} {which} ({names}); "
        "pass `workspace` with the one to use (the code actions on a file of it fill this in)"
    )


MANIFEST_FOLDERS: list[Path] = []
"""Folders besides the workspace a client's `manifest` may lie in (`--manifest-folder`)."""


def confine_manifest(server: AutoCodeServer, text: str, workspace: Path, *, command: str) -> Path:
    """A client's `manifest` path (relative to `workspace`, or absolute), if it lies inside the
    workspace or a folder the person named with `--manifest-folder` (links resolved).

    Nothing outside is looked at: the refusal is the same whether a file is there or not, so a
    client cannot use it to learn what exists on the server's disk.
    """
    path = to_path(text, server) if Path(text).is_absolute() or "://" in text else workspace / text
    real = Path(os.path.realpath(path))
    roots = [Path(os.path.realpath(root)) for root in (workspace, *MANIFEST_FOLDERS)]
    if any(real == root or real.is_relative_to(root) for root in roots):
        return path
    message = (
        f"{command}: manifest must be a file inside the workspace {workspace} (or a folder the "
        "server was started with --manifest-folder); put the manifest there and pass its path"
    )
    raise JsonRpcException(
        message=message, code=INVALID_PARAMS,
        data={"kind": "manifestOutsideWorkspace", "message": message},
    )


def confine(server: AutoCodeServer, workspace: str, *, command: str) -> Path:
    """The `workspace` argument, if it is a session folder or inside one (symbolic links resolved).

    Anything else is `-32602` with `data.kind = "workspaceOutsideSession"`: a client may only
    act on the folders it opened the session with.
    """
    path = to_path(workspace, server)
    real = path.resolve()
    roots = [folder.resolve() for folder in session_folders(server)]
    if any(real == root or real.is_relative_to(root) for root in roots):
        return path
    shown = ", ".join(str(r) for r in roots) or "none"
    message = (
        f"{command}: workspace {str(path)!r} is outside this session's workspace folders "
        f"({shown}); add the folder to the editor's workspace first"
    )
    raise JsonRpcException(
        message=message, code=INVALID_PARAMS,
        data={"kind": "workspaceOutsideSession", "message": message},
    )
