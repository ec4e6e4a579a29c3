"""Applying a task's merged result through the client's editor (`workspace/applyEdit`).

The engine calls `ClientEditor.read` for each touched file (an open buffer's text, unsaved
edits included, comes from the documents the client synchronises) and `apply` with what to
write. Both run in the engine's thread and wait for the event loop; the engine waits for
`apply` (and `save`) with the task's locks let go, so a slow answer holds up no other call. The edit replaces each
whole document, so the editor keeps one undo step per file. The engine records the change as
applied only when the client answers `applied: true`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from autocode_lsp import protocol
from autocode_lsp.pathmap import document_key

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer

log = logging.getLogger("autocode_lsp")

SAVE_TIMEOUT = 30.0
"""How long the editor may take to save the documents an apply changed."""

APPLY_TIMEOUT = 300.0
"""How long the editor may take to answer (it may ask the person to confirm)."""


def open_document(server: AutoCodeServer, client_uri: str) -> Any:
    """The document the editor has open under `client_uri` (however it spelled the URI), or None."""
    docs = server.workspace.text_documents
    found = docs.get(client_uri) or docs.get(unquote(client_uri))
    if found is not None:
        return found
    wanted = document_key(client_uri)
    return next((doc for uri, doc in docs.items() if document_key(uri) == wanted), None)


class CannotUseEditor(Exception):
    """This change cannot go through this editor (e.g. it cannot create or delete files)."""


class ClientEditor:
    """`can_apply` is False for a client without `workspace.applyEdit`: it still tells the engine
    which touched files have unsaved edits (so a write from disk does not overwrite them)."""

    def __init__(self, server: AutoCodeServer, workspace: Path, *, can_apply: bool = True,
                 task_id: str | None = None) -> None:
        self.server = server
        self.task_id = task_id
        self.workspace = workspace
        self.can_apply = can_apply
        loop = server.loop
        assert loop is not None
        self.loop = loop

    def _uri(self, rel: str) -> str:
        """The file's URI in the editor's names (`--path-map`)."""
        return self.server.path_map.uri_to_client(str(self.workspace / rel))

    def _document(self, rel: str) -> Any:
        # Under the editor's name; else under the server's, which an editor that resolves
        # symbolic links (eglot sends file-truename) may use when both names reach the file.
        found = open_document(self.server, self._uri(rel))
        return found if found is not None else open_document(self.server, (self.workspace / rel).as_uri())

    def _buffer(self, rel: str) -> bytes | None:
        async def get() -> bytes | None:
            doc = self._document(rel)
            return doc.source.encode("utf-8", "surrogateescape") if doc is not None else None

        return asyncio.run_coroutine_threadsafe(get(), self.loop).result(timeout=30)

    def read(self, rel: str) -> bytes | None:
        return self._buffer(rel) if self.can_apply else None

    def open_paths(self, paths: list[str]) -> list[str]:
        return [rel for rel in paths if self._buffer(rel) is not None]

    def unsaved(self, paths: list[str]) -> list[str]:
        """The paths open in the editor with text that differs from the file on disk."""
        out = []
        for rel in paths:
            buffer = self._buffer(rel)
            if buffer is None:
                continue
            try:
                disk = (self.workspace / rel).read_bytes()
            except OSError:
                disk = None
            if buffer != disk:
                out.append(rel)
        return out

    def save(self, plans: list[Any]) -> list[str]:
        """Ask an opted-in editor to save these documents (`autocode/task/saveDocuments`); the
        paths it saved. Any other client saves nothing here: the engine writes those files
        itself when the disk still holds what the buffer held, and reads every file back."""
        if not self.can_apply or not self.server.opt_in.get("saveDocuments") or not plans:
            return []
        by_uri = {self._uri(p.path): p.path for p in plans}
        params = {"taskId": self.task_id or "", "uris": [self.server.path_map.text_to_client(u) for u in by_uri]}
        async def ask() -> Any:
            return await self.server.protocol.send_request_async(protocol.TASK_SAVE_DOCUMENTS, params)

        future = asyncio.run_coroutine_threadsafe(ask(), self.loop)
        try:
            reply = future.result(timeout=SAVE_TIMEOUT)
        except Exception as exc:  # no such method in this editor, an error, no answer: nothing saved here
            future.cancel()
            log.info("the editor did not save the applied documents: %s", exc)
            return []
        raw = reply.get("saved") if isinstance(reply, dict) else getattr(reply, "saved", None)
        saved: set[Path] = set()
        for uri in raw if isinstance(raw, list) else []:
            fs = to_fs_path(str(uri))
            if fs is not None:
                with contextlib.suppress(Exception):  # a URI outside the map names no file of ours
                    saved.add(Path(self.server.path_map.to_server(fs)).resolve())
        return [rel for rel in by_uri.values() if (self.workspace / rel).resolve() in saved]

    def apply(self, label: str, plans: list[Any]) -> tuple[bool | None, str]:
        """(True, "") applied; (False, reason) refused; (None, reason): write from disk instead."""
        if not self.can_apply:
            return None, "the client does not apply workspace edits"
        try:
            edit = asyncio.run_coroutine_threadsafe(self._edit(plans), self.loop).result(timeout=30)
        except CannotUseEditor as exc:
            log.info("applying from disk: %s", exc)
            return None, str(exc)
        future = asyncio.run_coroutine_threadsafe(
            self.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label)),
            self.loop,
        )
        try:
            result = future.result(timeout=APPLY_TIMEOUT)
        except TimeoutError:
            future.cancel()
            return False, "the editor did not answer"
        if result is None:
            return False, "the editor gave no answer"
        applied = bool(getattr(result, "applied", False))
        reason = getattr(result, "failure_reason", None) or ""
        return applied, reason

    async def _edit(self, plans: list[Any]) -> types.WorkspaceEdit:
        caps = self.server.workspace_edit_caps
        document_changes = bool(caps.get("documentChanges"))
        resources = set(caps.get("resourceOperations") or [])
        changes: dict[str, list[types.TextEdit]] = {}
        steps: list[Any] = []
        codec = self.server.workspace.position_codec
        for plan in plans:
            uri = self._uri(plan.path)
            doc = self._document(plan.path)
            if plan.action == "delete":
                if "delete" not in resources:
                    raise CannotUseEditor("the editor cannot delete files")
                steps.append(types.DeleteFile(uri=uri, options=types.DeleteFileOptions(ignore_if_not_exists=True)))
                continue
            try:
                after = plan.after.decode("utf-8")
                before = (plan.before or b"").decode("utf-8")
            except UnicodeDecodeError:
                raise CannotUseEditor(f"{plan.path} is not UTF-8 text") from None
            created = plan.before is None and doc is None
            if created and "create" not in resources:
                raise CannotUseEditor("the editor cannot create files")
            lines = before.split("\n")
            end = types.Position(line=len(lines) - 1, character=codec.client_num_units(lines[-1]))
            whole = types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=after)
            if created:
                steps.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
            if document_changes:
                version = doc.version if doc is not None else None
                steps.append(types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri if doc is not None else uri, version=version
                    ),
                    edits=[whole],
                ))
            else:
                if created:
                    raise CannotUseEditor("the editor takes no document changes with file creation")
                changes[doc.uri if doc is not None else uri] = [whole]
        if document_changes:
            return types.WorkspaceEdit(document_changes=steps)
        return types.WorkspaceEdit(changes=changes)
