"""What a waiting task shows on its own documents: a diagnostic every client draws.

A task waiting for the person marks the document they decide on: the plan (`plan.md`, "waiting
for your approval"), the change (`changes.diff`) and the answers form (`answers.md`, "waiting
for your answer"). Clients that pull diagnostics (`textDocument/diagnostic`,
`workspace/diagnostic`) ask for them; the others get `textDocument/publishDiagnostics` when the
task changes and when the document opens. The decisions are quick fixes on the diagnostic (code
actions that carry it), so the light bulb next to "waiting for your approval" offers them; none
is marked preferred, since a client may apply a preferred fix by itself and a decision is the
person's act. A code lens changes with the task, so a client with `refreshSupport` is asked to
fetch lenses again (`workspace/codeLens/refresh`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from autocode_lsp import protocol
from autocode_lsp.features import titles

if TYPE_CHECKING:
    from autocode.tasks import TaskSnapshot
    from autocode_lsp.server import AutoCodeServer

log = logging.getLogger("autocode_lsp")

SOURCE = "AutoCode"
TOP = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))


@dataclass(frozen=True)
class Waiting:
    """One document a task waits on, and what for."""

    path: Path
    code: str
    message: str
    task_id: str
    workspace: str
    verbs: tuple[str, ...]
    """The kinds (`source.autocode.<verb>`) of the task's code actions offered as quick fixes."""


@dataclass
class _State:
    published: dict[str, str] = field(default_factory=dict)
    """Client URI -> task id of each document this session was given a diagnostic for."""
    refreshed: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    """Task id -> (plan revision, needs kind) of the last lens refresh asked for."""


def _state(server: AutoCodeServer) -> _State:
    found = server.state.get("diagnostics")
    if not isinstance(found, _State):
        found = server.state["diagnostics"] = _State()
    return found


def waiting_on(snap: TaskSnapshot) -> list[Waiting]:
    """The documents `snap` waits on the person for (none when it waits for nothing)."""
    run_dir = Path(snap.run_dir)
    needs = snap.needs
    brief = titles.short(snap.brief)
    if isinstance(needs, protocol.ApprovePlan):
        revision = needs.plan_revision
        return [Waiting(
            run_dir / "plan.md", "waitingForApproval",
            f"AutoCode: plan r{revision} of '{brief}' is waiting for your approval; the quick fixes "
            "approve it or request changes",
            snap.id, snap.workspace, ("approve", "requestChanges"),
        )]
    if isinstance(needs, protocol.ApproveCompletion):
        return [Waiting(
            run_dir / "changes.diff", "waitingForApproval",
            f"AutoCode: the changes of '{brief}' are waiting for your approval; the quick fix applies them",
            snap.id, snap.workspace, ("apply",),
        )]
    if isinstance(needs, protocol.AnswerQuestions) and needs.questions:
        count = len(needs.questions)
        return [Waiting(
            run_dir / "answers.md", "waitingForAnswer",
            f"AutoCode: '{brief}' is waiting for your answer to {count} question(s); write them "
            "here and save, or use the quick fixes",
            snap.id, snap.workspace, ("answer",),
        )]
    return []


def diagnostic(server: AutoCodeServer, waiting: Waiting) -> types.Diagnostic:
    return types.Diagnostic(
        range=TOP,
        message=server.path_map.text_to_client(waiting.message),
        severity=types.DiagnosticSeverity.Information,
        source=SOURCE,
        code=waiting.code,
        data={"taskId": waiting.task_id, "verbs": list(waiting.verbs)},
    )


def uri_of(server: AutoCodeServer, path: Path) -> str:
    return str(server.path_map.uri_to_client(str(path)))


# ---------------------------------------------------------------------- push


def task_changed(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    """The task's documents' diagnostics and lenses as the task now stands (event loop thread)."""
    if server.closed:
        return
    if server.supports_push_diagnostics and not server.supports_pull_diagnostics:
        _push(server, snap)
    elif server.supports_pull_diagnostics and server.supports_diagnostic_refresh:
        _ask(server, server.workspace_diagnostic_refresh_async(None), "diagnostic refresh")
    state = _state(server)
    stamp = (snap.plan_revision, snap.needs.kind)  # what the lenses' titles and commands show
    if server.supports_lens_refresh and state.refreshed.get(snap.id) != stamp:
        state.refreshed[snap.id] = stamp
        _ask(server, server.workspace_code_lens_refresh_async(None), "code lens refresh")


def _ask(server: AutoCodeServer, request: Any, what: str) -> None:
    async def send() -> None:
        try:
            await request
        except Exception as exc:  # the client could not refresh: it still asks on its own
            log.info("the editor did not take the %s: %s", what, exc)

    server.spawn(send(), what)


def _push(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    state = _state(server)
    now = {uri_of(server, w.path): w for w in waiting_on(snap)}
    for uri, task_id in list(state.published.items()):
        if task_id == snap.id and uri not in now:
            state.published.pop(uri)
            server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    for uri, waiting in now.items():
        state.published[uri] = snap.id
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[diagnostic(server, waiting)])
        )


def document_opened(server: AutoCodeServer, uri: str, snap: TaskSnapshot | None) -> None:
    """A document of a task opened: a push client gets its diagnostic now (it may have dropped
    the one sent while the file was closed)."""
    if snap is not None and server.supports_push_diagnostics and not server.supports_pull_diagnostics:
        _push(server, snap)


# ---------------------------------------------------------------------- pull


def report(server: AutoCodeServer, path: Path, snaps: list[TaskSnapshot]) -> list[types.Diagnostic]:
    """The diagnostics of one document among the open tasks `snaps`."""
    return [diagnostic(server, w) for s in snaps for w in waiting_on(s) if w.path == path]


def workspace_report(server: AutoCodeServer, snaps: list[TaskSnapshot]) -> types.WorkspaceDiagnosticReport:
    items: list[types.WorkspaceFullDocumentDiagnosticReport | types.WorkspaceUnchangedDocumentDiagnosticReport]
    items = [
        types.WorkspaceFullDocumentDiagnosticReport(
            uri=uri_of(server, w.path), version=None, items=[diagnostic(server, w)],
        )
        for s in snaps for w in waiting_on(s)
    ]
    return types.WorkspaceDiagnosticReport(items=items)


# ---------------------------------------------------------------------- quick fixes


def ours(params: types.CodeActionParams) -> list[types.Diagnostic]:
    """The AutoCode diagnostics among those a code action request carries."""
    return [
        d for d in params.context.diagnostics or []
        if d.source == SOURCE and isinstance(d.data, dict) and isinstance(d.data.get("taskId"), str)
    ]


def quick_fixes(carried: list[types.Diagnostic], snaps: list[TaskSnapshot], actions_of: Any) -> list[types.CodeAction]:
    """The task actions each carried diagnostic asks for, as quick fixes that carry it."""
    fixes: list[types.CodeAction] = []
    by_id = {s.id: s for s in snaps}
    for diag in carried:
        assert isinstance(diag.data, dict)
        snap = by_id.get(diag.data["taskId"])
        if snap is None:
            continue  # the task moved on since the editor drew this diagnostic
        verbs = [str(v) for v in diag.data.get("verbs") or []]
        for action in actions_of(snap):
            verb = str(action.kind).rsplit(".", 1)[-1]
            if verb in verbs:
                fixes.append(types.CodeAction(
                    title=action.title, kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag], command=action.command,
                ))
    return fixes
