"""Every task step from a stock editor: code actions, code lenses and files the person saves.

A client that only knows the base protocol still shows code actions in a menu,
opens files and saves them. So whatever the workspace's tasks wait for is
offered as a code action on any of its documents ("AutoCode: approve plan r2 of
'…'"), each bound to a command with its ids filled in; the plan, the change and
the doctor report are real files in `.autocode/runs/`; and free text (an
answer, plan feedback, a brief, a memory query) is written into a small form
the server opens and reads back when the person saves it. Nothing here decides
for the person: a form left empty is no answer, a dismissed prompt is asked
again at the next interaction.

Kept whole: every part of the stock-client face (code actions, lenses, the
forms a person saves) shares the form registry and the task look-ups; each
handler is short.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autocode.doctor import build_report, render_text
from autocode.errors import AutoCodeError
from autocode.tasks import TaskRun, list_tasks
from autocode_lsp import documents, protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import domain_error, engine_call
from autocode_lsp.features import diagnostics, memory, tasks, titles
from autocode_lsp.features.tasks import Reply

if TYPE_CHECKING:
    from autocode.tasks import TaskSnapshot
    from autocode_lsp.server import AutoCodeServer

log = logging.getLogger("autocode_lsp")

KIND = "source.autocode"
ANSWER_IN_FILE = "Answer in a file…"
ACCEPT_DEFAULT = "Accept the proposed default (not remembered)"
DELEGATE = "Let AutoCode decide"


WATCH_INTERVAL_S = 0.5
WATCH_FOR_S = 24 * 3600.0
"""How often and for how long the server looks at a form it opened for a change on disk."""


@dataclass
class _Forms:
    """Per session: questions a dismissed prompt left unanswered, forms already acted on (a file
    saved twice with the same text starts one task, not two), and the forms this session
    opened, with their last seen size and time of change."""

    unasked: dict[tuple[str, str], Path] = field(default_factory=dict)
    handled: set[tuple[str, str]] = field(default_factory=set)
    watched: dict[Path, tuple[Path, tuple[int, int], float]] = field(default_factory=dict)
    watcher: Any = None


def _forms(server: AutoCodeServer) -> _Forms:
    found = server.state.get("actions")
    if not isinstance(found, _Forms):
        found = server.state["actions"] = _Forms()
    return found


# ---------------------------------------------------------------------- where a document lives


def folder_of(server: AutoCodeServer, uri: str) -> Path | None:
    """The session folder holding the document (the deepest one), or None."""
    try:
        path = workspaces.to_path(uri, server)
    except Exception:
        return None
    best: Path | None = None
    for folder in workspaces.session_folders(server):
        try:
            path.relative_to(folder)
        except ValueError:
            continue
        if best is None or len(folder.parts) > len(best.parts):
            best = folder
    return best


def _arg(folder: Path, **values: Any) -> dict[str, Any]:
    return {**values, "workspace": str(folder)}


_short = titles.short


def _action(title: str, verb: str, command: str, args: dict[str, Any]) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=f"{KIND}.{verb}",
        command=types.Command(title=title, command=command, arguments=[args]),
    )


def task_actions(snap: TaskSnapshot, folder: Path) -> list[types.CodeAction]:
    """What one task lets the person do now, as code actions with every id filled in."""
    task_id = snap.id
    needs = snap.needs
    ref = _arg(folder, taskId=task_id)
    found: list[types.CodeAction] = []
    if isinstance(needs, protocol.AnswerQuestions):
        for q in needs.questions:
            found.append(_action(
                titles.answer(q.text), "answer",
                protocol.TASK_ASK, _arg(folder, taskId=task_id, questionId=q.id),
            ))
    elif isinstance(needs, protocol.ApprovePlan):
        revision = needs.plan_revision
        found.append(_action(titles.review_plan(revision, snap.brief), "review", protocol.TASK_REVIEW, ref))
        found.append(_action(
            titles.approve_plan(revision, snap.brief), "approve",
            protocol.TASK_APPROVE_PLAN, _arg(folder, taskId=task_id, revision=revision),
        ))
        found.append(_action(titles.request_changes(revision, snap.brief), "requestChanges",
                             protocol.TASK_REQUEST_CHANGES, ref))
    elif isinstance(needs, protocol.ApproveCompletion):
        found.append(_action(titles.review_changes(snap.brief), "review", protocol.TASK_REVIEW, ref))
        if needs.confirmation:
            # Nothing proves this change: the only way to apply it says so in its title.
            verdict = needs.proof.status if needs.proof else "unproven"
            found.append(_action(
                titles.apply_changes(snap.brief, verdict), "apply",
                protocol.TASK_APPROVE_COMPLETION, _arg(folder, taskId=task_id, confirm=needs.confirmation),
            ))
        else:
            found.append(_action(titles.apply_changes(snap.brief), "apply",
                                 protocol.TASK_APPROVE_COMPLETION, ref))
    if snap.state == "INTERRUPTED":
        step = (snap.interrupted_in or "its step").lower()
        found.append(_action(titles.resume(snap.brief, step), "resume",
                             protocol.TASK_RESUME, ref))
    if can_retry_verification(snap):
        found.append(_action(titles.retry_verification(snap.brief), "retryVerification",
                             protocol.TASK_RETRY_VERIFICATION, ref))
    if not snap.done:
        found.append(_action(titles.cancel(snap.brief), "cancel", protocol.TASK_CANCEL, ref))
    return found


def can_retry_verification(snap: TaskSnapshot) -> bool:
    """A verification that failed, waits for the person's approval, or was interrupted can run again."""
    if snap.state == "FAILED":
        return snap.error is not None and snap.error.phase == "verifying"
    return snap.state == "WAITING_FOR_COMPLETION_APPROVAL" or (
        snap.state == "INTERRUPTED" and snap.interrupted_in == "VERIFYING")


def general_actions(folder: Path) -> list[types.CodeAction]:
    ws = _arg(folder)
    return [
        _action("AutoCode: start a task…", "start", protocol.TASK_COMPOSE, ws),
        _action("AutoCode: doctor", "doctor", protocol.DOCTOR_OPEN, ws),
        _action("AutoCode: verify my changes", "verify", protocol.VERIFY, ws),
        _action("AutoCode: search memories…", "searchMemories", protocol.MEMORY_COMPOSE_SEARCH, ws),
    ]


def _open_tasks(folder: Path) -> list[TaskSnapshot]:
    try:
        return [s for s in reversed(list_tasks(folder)) if not s.done or can_retry_verification(s)]
    except AutoCodeError:  # not a repository: no task can live here
        return []


async def code_action(
    server: AutoCodeServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    folder = folder_of(server, params.text_document.uri)
    if folder is None:
        return None
    only = params.context.only
    snaps = await engine_call(_open_tasks, folder)
    await _ask_again(server, snaps)
    fixes = diagnostics.quick_fixes(diagnostics.ours(params), snaps, lambda s: task_actions(s, folder))
    fixed = {(f.command.command, repr(f.command.arguments)) for f in fixes if f.command is not None}
    found = fixes + [
        a for a in [a for s in snaps for a in task_actions(s, folder)] + general_actions(folder)
        if a.command is None or (a.command.command, repr(a.command.arguments)) not in fixed
    ]
    if only:
        found = [a for a in found if any(str(a.kind).startswith(str(k)) for k in only)]
    for action in found:
        _to_client(server, action.command)
    return found


def _to_client(server: AutoCodeServer, command: types.Command | None) -> None:
    """A command's arguments in the editor's names for paths (`--path-map`)."""
    if command is not None and command.arguments and server.path_map:
        command.arguments = server.path_map.outbound(list(command.arguments))


# ---------------------------------------------------------------------- diagnostics


async def did_open(server: AutoCodeServer, params: types.DidOpenTextDocumentParams) -> None:
    snap = await _task_of_document(server, params.text_document.uri)
    if snap is not None:
        diagnostics.document_opened(server, params.text_document.uri, snap)


async def _task_of_document(server: AutoCodeServer, uri: str) -> TaskSnapshot | None:
    """The task whose run folder holds the document (plan, changes, answers), or None."""
    folder = folder_of(server, uri)
    if folder is None:
        return None
    which = documents.kind_of(folder, workspaces.to_path(uri, server))
    if which is None or which[1] is None:
        return None
    return await engine_call(_snapshot_or_none, folder, which[1])


async def document_diagnostic(
    server: AutoCodeServer, params: types.DocumentDiagnosticParams
) -> types.RelatedFullDocumentDiagnosticReport:
    snap = await _task_of_document(server, params.text_document.uri)
    items = [] if snap is None else diagnostics.report(
        server, workspaces.to_path(params.text_document.uri, server), [snap]
    )
    return types.RelatedFullDocumentDiagnosticReport(items=items)


async def workspace_diagnostic(
    server: AutoCodeServer, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    # VS Code asks every two seconds: folders without task runs cost one stat, no engine call.
    folders = [f for f in workspaces.repository_folders(server) if (f / ".autocode" / "runs").is_dir()]
    if not folders:
        return diagnostics.workspace_report(server, [])

    def work() -> list[TaskSnapshot]:
        return [s for folder in folders for s in _open_tasks(folder)]

    return diagnostics.workspace_report(server, await engine_call(work))


# ---------------------------------------------------------------------- code lenses


async def code_lens(server: AutoCodeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    folder = folder_of(server, params.text_document.uri)
    if folder is None:
        return []

    path = workspaces.to_path(params.text_document.uri, server)
    which = documents.kind_of(folder, path)
    if which is None or which[1] is None:
        return []
    name, task_id = which
    snap = await engine_call(_snapshot_or_none, folder, task_id)
    if snap is None or name not in (documents.PLAN, documents.CHANGES):
        return []
    top = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    wanted = {documents.PLAN: ("approve", "requestChanges", "cancel"),
              documents.CHANGES: ("apply", "cancel")}[name]
    lenses = []
    for action in task_actions(snap, folder):
        verb = str(action.kind).rsplit(".", 1)[-1]
        if verb in wanted and action.command is not None:
            title = action.command.title.removeprefix("AutoCode: ").split(" of '")[0].split(" '")[0]
            command = types.Command(title=title.capitalize(), command=action.command.command,
                                    arguments=action.command.arguments)
            _to_client(server, command)
            lenses.append(types.CodeLens(range=top, command=command))
    return lenses


def _snapshot_or_none(folder: Path, task_id: str) -> TaskSnapshot | None:
    try:
        return TaskRun.load(folder, task_id).snapshot()
    except AutoCodeError:
        return None


# ---------------------------------------------------------------------- opening documents


async def show(server: AutoCodeServer, path: Path, what: str) -> protocol.OpenedDocument:
    """Open `path` in the editor when it can (`window/showDocument`), else name it."""
    uri = path.as_uri()
    shown = False
    if server.supports_show_document:
        try:
            reply = await server.window_show_document_async(
                types.ShowDocumentParams(uri=server.path_map.uri_to_client(str(path)), take_focus=True)
            )
            shown = bool(reply and reply.success)
        except Exception as exc:  # the editor could not open it: fall back to naming it
            log.info("the editor did not open %s: %s", path, exc)
    if not shown:
        server.show(f"AutoCode: {what}: open {path}")
    return protocol.OpenedDocument(path=str(path), uri=uri, shown=shown)


def _task_folder(folder: Path, task_id: str) -> tuple[TaskSnapshot, Path]:
    snap = TaskRun.load(folder, task_id).snapshot()
    documents.runs_folder(folder)
    return snap, Path(snap.run_dir)


def _not_waiting(snap: TaskSnapshot, for_what: str) -> Exception:
    kind = snap.needs.kind
    now = kind.replace("_", " ") if kind else snap.state.lower()
    return domain_error(
        "notAwaitingInput",
        f"task {snap.id} is not waiting for {for_what} (it is {now}); the code actions on any "
        "file of the workspace show what it needs now",
    )


async def _task_folders(server: AutoCodeServer, args: Any, command: str) -> Path:
    folder = workspaces.resolve(server, args.workspace, command=command)
    return folder


@command(protocol.TASK_REVIEW)
async def review(server: AutoCodeServer, args: protocol.TaskRefArgs) -> protocol.OpenedDocument:
    folder = await _task_folders(server, args, protocol.TASK_REVIEW)

    def work() -> tuple[Path | None, TaskSnapshot]:
        snap, run_dir = _task_folder(folder, args.task_id)
        needs = snap.needs
        if isinstance(needs, protocol.ApprovePlan):
            return _write(server, run_dir, documents.PLAN, needs.markdown), snap
        if isinstance(needs, protocol.ApproveCompletion):
            diff = run_dir / "evidence" / "changes.diff"
            text = diff.read_text(encoding="utf-8", errors="replace") if diff.is_file() else ""
            return documents.write(run_dir, documents.CHANGES, text), snap
        return None, snap

    path, snap = await engine_call(work)
    if path is None:
        raise _not_waiting(snap, "a review")
    what = "the plan" if path.name.endswith(".md") else "the changes"
    return await show(server, path, f"{what} of task {args.task_id}")


@command(protocol.TASK_REQUEST_CHANGES)
async def request_changes(
    server: AutoCodeServer, args: protocol.TaskRefArgs
) -> protocol.OpenedDocument:
    folder = await _task_folders(server, args, protocol.TASK_REQUEST_CHANGES)

    def work() -> tuple[Path | None, TaskSnapshot]:
        snap, run_dir = _task_folder(folder, args.task_id)
        if not isinstance(snap.needs, protocol.ApprovePlan):
            return None, snap
        _write(server, run_dir, documents.PLAN, snap.needs.markdown)
        return _write(server, run_dir, documents.FEEDBACK, documents.feedback_form(snap)), snap

    path, snap = await engine_call(work)
    if path is None:
        raise _not_waiting(snap, "plan feedback")
    watch(server, folder, path)
    return await show(server, path, "write what should change in the plan and save")


def _write(server: AutoCodeServer, where: Path, name: str, text: str) -> Path:
    """A document the person reads, with every server path in the editor's names (`--path-map`).
    The change itself (changes.diff) is written as it is: its lines are the files' content."""
    return documents.write(where, name, server.path_map.text_to_client(text))


def _form_in_runs(server: AutoCodeServer, folder: Path, name: str, text: str) -> Path:
    runs = documents.runs_folder(folder)
    path = runs / name
    if path.is_file() and not path.is_symlink() and path.stat().st_size > 0:
        return path  # the person's draft stays
    return _write(server, runs, name, text)


@command(protocol.TASK_COMPOSE)
async def compose_task(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> protocol.OpenedDocument:
    folder = workspaces.resolve(server, args.workspace, command=protocol.TASK_COMPOSE)

    path = await engine_call(_form_in_runs, server, folder, documents.NEW_TASK, documents.new_task_form())
    watch(server, folder, path)
    return await show(server, path, "write the task's brief and save to start it")


@command(protocol.MEMORY_COMPOSE_SEARCH)
async def compose_search(
    server: AutoCodeServer, args: protocol.WorkspaceArgs
) -> protocol.OpenedDocument:
    folder = workspaces.resolve(server, args.workspace, command=protocol.MEMORY_COMPOSE_SEARCH)

    path = await engine_call(
        _form_in_runs, server, folder, documents.MEMORY_SEARCH, documents.memory_search_form()
    )
    watch(server, folder, path)
    return await show(server, path, "write a query and save to search memories")


@command(protocol.DOCTOR_OPEN)
async def open_doctor(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> protocol.OpenedDocument:
    folder = workspaces.resolve(server, args.workspace, command=protocol.DOCTOR_OPEN)

    def work() -> Path:
        text = render_text(build_report(folder))
        return _write(server, documents.runs_folder(folder), documents.DOCTOR, text)

    path = await engine_call(work)
    return await show(server, path, "the doctor report")


# ---------------------------------------------------------------------- questions


@command(protocol.TASK_ASK)
async def ask(server: AutoCodeServer, args: protocol.TaskAskArgs) -> TaskSnapshot:
    folder = workspaces.resolve(server, args.workspace, command=protocol.TASK_ASK)
    snap = await engine_call(_snapshot_or_none, folder, args.task_id)
    if snap is None:
        raise domain_error("taskNotFound", f"no task {args.task_id} in {folder}")
    questions = snap.needs.questions if isinstance(snap.needs, protocol.AnswerQuestions) else []
    chosen = [q for q in questions if args.question_id in (None, q.id)]
    if not chosen:
        raise _not_waiting(snap, "that answer" if args.question_id else "answers")
    server.spawn(prompt_and_record(server, snap, chosen[0]), f"question {args.task_id}")
    return snap


async def prompt(server: AutoCodeServer, snap: TaskSnapshot, question: Any) -> Reply | None:
    """Ask one question with `window/showMessageRequest`, offering every way to answer. None:
    the person chose to answer in a file (it is open now) or dismissed the prompt (asked again
    at the next interaction)."""
    # The protocol lists the default among the choices when a question has no others; taking
    # it is accepting the default, never a choice of the person's.
    options = [c for c in question.choices if c and c != question.default]
    buttons = [*options, ANSWER_IN_FILE]
    if question.default:
        buttons.append(ACCEPT_DEFAULT)
    buttons.append(DELEGATE)
    default = f" (proposed: {question.default})" if question.default else ""
    params = types.ShowMessageRequestParams(
        type=types.MessageType.Info,
        message=f"AutoCode task {snap.id} asks: {question.text}{default}",
        actions=[types.MessageActionItem(title=b) for b in buttons],
    )
    task_key = (snap.id, str(question.id))
    forms = _forms(server)
    raw = await tasks.ask_client(server, snap, types.WINDOW_SHOW_MESSAGE_REQUEST, params)
    if raw is tasks.NO_REPLY:
        return None  # asked again at the next interaction (tasks.ask_again)
    reply = raw if raw is None or hasattr(raw, "title") else _as_action_item(raw)
    title = reply.title if reply is not None else None
    if title is None:
        forms.unasked[task_key] = Path(snap.workspace)
        log.info("task %s: question %s dismissed; nothing recorded, asked again at the next interaction",
                 snap.id, question.id)
        return None
    forms.unasked.pop(task_key, None)
    if title == ACCEPT_DEFAULT and question.default:
        return Reply(question.default, "acceptedDefault")
    if title == DELEGATE:
        return Reply("", "delegated")
    if title == ANSWER_IN_FILE:
        await open_answers(server, Path(snap.workspace), snap.id)
        return None
    if title in options:
        return Reply(title, "chosen")
    log.info("task %s: the editor answered with %r, which was not offered", snap.id, title)
    forms.unasked[task_key] = Path(snap.workspace)
    return None


def _as_action_item(raw: Any) -> types.MessageActionItem | None:
    title = raw.get("title") if isinstance(raw, dict) else getattr(raw, "title", None)
    return types.MessageActionItem(title=title) if isinstance(title, str) else None


async def prompt_and_record(server: AutoCodeServer, snap: TaskSnapshot, question: Any) -> None:
    reply = await prompt(server, snap, question)
    if reply is None:
        return
    try:
        await tasks.answer_with(server, Path(snap.workspace), snap.id, question.id, reply)
    except JsonRpcException as exc:  # answered elsewhere meanwhile: say what became of this reply
        server.show(
            f"AutoCode task {snap.id}: your reply was not recorded: {exc.message}",
            types.MessageType.Warning,
        )


async def open_answers(server: AutoCodeServer, folder: Path, task_id: str) -> protocol.OpenedDocument:
    def work() -> Path:
        snap, run_dir = _task_folder(folder, task_id)
        return _write(server, run_dir, documents.ANSWERS, documents.answers_form(snap))

    path = await engine_call(work)
    watch(server, folder, path)
    return await show(server, path, "write your answers under the questions and save")


async def _ask_again(server: AutoCodeServer, snaps: list[TaskSnapshot]) -> None:
    """Prompts the person dismissed, or that got an error or no reply, are asked again at their
    next interaction."""
    tasks.ask_again(server)
    forms = _forms(server)
    if not forms.unasked:
        return
    for snap in snaps:
        if not isinstance(snap.needs, protocol.AnswerQuestions):
            continue
        for question in snap.needs.questions:
            if forms.unasked.pop((snap.id, question.id), None) is not None:
                server.spawn(prompt_and_record(server, snap, question), f"question {snap.id}")
                return  # one prompt at a time


# ---------------------------------------------------------------------- saved forms


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


def watch(server: AutoCodeServer, folder: Path, path: Path) -> None:
    """Look at a form this session opened until the person saves it. Editors send `didSave`
    only for documents of the languages they manage; a Markdown form may be none of them, so
    the server also notices the save on disk itself."""
    forms = _forms(server)
    loop = asyncio.get_running_loop()
    forms.watched[path] = (folder, _stamp(path), loop.time() + WATCH_FOR_S)
    if forms.watcher is None or forms.watcher.done():
        forms.watcher = server.spawn(_watch_forms(server), "watching AutoCode forms")


async def _watch_forms(server: AutoCodeServer) -> None:
    forms = _forms(server)
    loop = asyncio.get_running_loop()
    while forms.watched and not server.closed:
        await asyncio.sleep(WATCH_INTERVAL_S)
        for path, (folder, seen, until) in list(forms.watched.items()):
            now = await asyncio.to_thread(_stamp, path)
            if loop.time() > until or now == (-1, -1):
                forms.watched.pop(path, None)
            elif now != seen:
                forms.watched[path] = (folder, now, until)
                await form_saved(server, folder, path, via="on disk")


async def did_save(server: AutoCodeServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    folder = folder_of(server, uri)
    if folder is None:
        return
    path = workspaces.to_path(uri, server)
    forms = _forms(server)
    if path in forms.watched:
        found, _, until = forms.watched[path]
        forms.watched[path] = (found, _stamp(path), until)
    await tasks.document_saved(server, folder, path)
    await form_saved(server, folder, path, via="didSave")


async def form_saved(server: AutoCodeServer, folder: Path, path: Path, *, via: str) -> None:
    """Act on a form the person saved (each distinct content once). A save that changes nothing
    is logged (`via` says how it was noticed), so the person and the tests see it was read."""
    which = documents.kind_of(folder, path)
    if which is None:
        return
    name, task_id = which
    try:
        form = await engine_call(documents.read_form, path)
    except Exception as exc:
        server.show(f"AutoCode could not read {path.name}: {exc}", types.MessageType.Warning)
        return
    digest = hashlib.sha256(repr(sorted(form.items())).encode()).hexdigest()
    key = (str(path), digest)
    forms = _forms(server)
    if not form or key in forms.handled:
        log.info("%s saved (%s): %s", path.name, via, "already taken" if form else "nothing filled in")
        return
    forms.handled.add(key)
    try:
        if name == documents.ANSWERS and task_id:
            await _answers_saved(server, folder, task_id, form)
        elif name == documents.FEEDBACK and task_id and form.get("feedback"):
            await _feedback_saved(server, folder, task_id, form["feedback"])
        elif name == documents.NEW_TASK and form.get("brief"):
            await _brief_saved(server, folder, form["brief"])
        elif name == documents.MEMORY_SEARCH and form.get("query"):
            await _query_saved(server, folder, form["query"])
        else:
            log.info("%s saved (%s): nothing to act on", path.name, via)
    except Exception as exc:
        forms.handled.discard(key)  # saving again tries again
        message = getattr(exc, "message", None) or str(exc)
        server.show(f"AutoCode: {path.name} was not taken: {message}", types.MessageType.Warning)


async def _answers_saved(server: AutoCodeServer, folder: Path, task_id: str, form: dict[str, str]) -> None:
    snap = await engine_call(_snapshot_or_none, folder, task_id)
    if snap is None:
        return
    pending = [q.id for q in snap.needs.questions] if isinstance(snap.needs, protocol.AnswerQuestions) else []
    taken = [qid for qid in pending if qid in form]
    if not taken:
        server.show(
            f"AutoCode task {task_id}: no answer was written under an open question; nothing recorded"
            if pending else f"AutoCode task {task_id} has no open question any more; nothing recorded"
        )
        return
    for qid in taken:
        await tasks.answer_with(server, folder, task_id, qid, Reply(form[qid], "typed"))
    left = len(pending) - len(taken)
    server.show(
        f"AutoCode task {task_id}: recorded {len(taken)} answer(s) as yours"
        + (f"; {left} question(s) still open in answers.md" if left else "")
    )


async def _feedback_saved(server: AutoCodeServer, folder: Path, task_id: str, feedback: str) -> None:
    snap = await engine_call(_snapshot_or_none, folder, task_id)
    if snap is None or not isinstance(snap.needs, protocol.ApprovePlan):
        server.show(f"AutoCode task {task_id} is not waiting for plan feedback; nothing sent")
        return
    revision = snap.needs.plan_revision
    await tasks.reject_plan(server, protocol.TaskRejectPlanArgs(
        task_id=task_id, feedback=feedback, workspace=str(folder)
    ))
    server.show(f"AutoCode task {task_id}: plan r{revision} went back with your feedback")


async def _brief_saved(server: AutoCodeServer, folder: Path, brief: str) -> None:
    snap = await tasks.start(server, protocol.TaskStartArgs(brief=brief, workspace=str(folder)))

    def reset() -> Path:  # the next "start a task…" opens an empty form

        return _write(server, documents.runs_folder(folder), documents.NEW_TASK, documents.new_task_form())

    path = await engine_call(reset)
    forms = _forms(server)
    if path in forms.watched:
        forms.watched.pop(path, None)
    server.show(
        f"AutoCode started task {snap.id}; the code actions on any file show what it needs"
    )


async def _query_saved(server: AutoCodeServer, folder: Path, query: str) -> None:
    result = await memory.search(server, protocol.MemorySearchArgs(query=query, workspace=str(folder)))

    def work() -> Path:
        rows = [protocol.to_wire(m) for m in result.memories]
        return _write(
            server, documents.runs_folder(folder), documents.MEMORY_RESULTS, documents.memory_results(query, rows)
        )

    path = await engine_call(work)
    await show(server, path, f"{len(result.memories)} memories for '{_short(query)}'")


# ---------------------------------------------------------------------- commands without ids

NEEDED_BY = {
    protocol.TASK_APPROVE_PLAN: "approve_plan",
    protocol.TASK_REJECT_PLAN: "approve_plan",
    protocol.TASK_REQUEST_CHANGES: "approve_plan",
    protocol.TASK_APPROVE_COMPLETION: "approve_completion",
    protocol.TASK_ASK: "answer_questions",
    protocol.TASK_ANSWER: "answer_questions",
}
"""What a task must wait for to be the one a command without `taskId` acts on."""


async def fill_task(server: AutoCodeServer, command: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A task command sent without `taskId` acts on the one open task it fits (and a plan
    approval on that task's current plan revision); otherwise the reply lists the tasks."""
    if isinstance(raw.get("workspace"), str):
        # Confined before any task is read: the reply lists tasks, and a folder outside the
        # session must not have its tasks' ids and briefs named to this client.
        workspaces.confine(server, raw["workspace"], command=command)
        folders = [workspaces.given_workspace(raw["workspace"], server)]
    else:
        folders = workspaces.repository_folders(server)

    def work() -> list[TaskSnapshot]:
        return [s for folder in folders for s in _open_tasks(folder)]

    snaps = await engine_call(work)
    need = NEEDED_BY.get(command)
    fitting = [s for s in snaps if need is None or s.needs.kind == need]
    if len(fitting) != 1:
        listed = [
            {"taskId": s.id, "brief": s.brief, "workspace": s.workspace, "waitingFor": s.needs.kind}
            for s in (fitting or snaps)
        ]
        what = f"waiting for {need.replace('_', ' ')}" if need else "open"
        names = "; ".join(f"{t['taskId']} ({_short(str(t['brief']), 40)})" for t in listed) or "none"
        raise domain_error(
            "taskChoiceNeeded",
            f"{command} was sent without `taskId` and {len(fitting)} tasks are {what}: {names}. "
            "Send it again with the `taskId` of one of them.",
            tasks=listed,
        )
    snap = fitting[0]
    filled = {**raw, "taskId": snap.id, "workspace": raw.get("workspace") or snap.workspace}
    if command == protocol.TASK_APPROVE_PLAN and "revision" not in raw and isinstance(snap.needs, protocol.ApprovePlan):
        filled["revision"] = snap.needs.plan_revision
    return filled
