"""Which folder a command works on: its own `workspace` argument, else the session's folders.

A session without any folder has no repository in context; commands that need
one fail with `noRepository` and say how to give one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from autocode_lsp.errors import domain_error, invalid_arguments

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


def to_path(text: str) -> Path:
    """A folder path from a path or a `file://` URI given by a client."""
    from pygls.uris import to_fs_path

    if "://" in text:
        fs = to_fs_path(text)
        if fs is None:
            raise invalid_arguments(
                f"workspace {text!r} is not a file:// URI or a path; pass the folder's path"
            )
        path = Path(unquote(fs))
    else:
        path = Path(text)
    if not path.is_absolute():
        raise invalid_arguments(
            f"workspace {text!r} is relative; pass an absolute path or a file:// URI"
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
            folders.append(to_path(folder.uri))
        except Exception:  # a non-file folder (e.g. a virtual file system) has no repository
            continue
    if not folders and ws.root_path:
        folders.append(Path(ws.root_path))
    return folders


def given_workspace(text: str) -> Path:
    path = to_path(text)
    if not path.is_dir():
        raise invalid_arguments(f"workspace {str(path)!r} is not an existing folder")
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


def optional(server: AutoCodeServer, workspace: str | None, *, command: str) -> Path | None:
    """The folder a command works on, or None when the session has none."""
    if workspace is not None:
        return given_workspace(workspace)
    folders = session_folders(server)
    if not folders:
        return None
    if len(folders) > 1:
        names = ", ".join(str(f) for f in folders)
        raise invalid_arguments(
            f"{command}: this session has {len(folders)} workspace folders ({names}); "
            "pass `workspace` to say which one"
        )
    return folders[0]


def confine(server: AutoCodeServer, workspace: str, *, command: str) -> Path:
    """The `workspace` argument, if it is a session folder or inside one (symbolic links resolved).

    Anything else is `-32602` with `data.kind = "workspaceOutsideSession"`: a client may only
    act on the folders it opened the session with.
    """
    from pygls.exceptions import JsonRpcException

    from autocode_lsp.protocol import INVALID_PARAMS

    path = to_path(workspace)
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
