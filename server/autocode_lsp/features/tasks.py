"""Task commands, and the conversation that brings a paused task to the person.

Every change the engine commits reaches an opted-in client as
`autocode/task/didChange` (in revision order, sent from the event loop). When a
task pauses, the server asks: opted-in clients get `autocode/task/askQuestion`
and `autocode/task/reviewPlan`; plain clients get `window/showMessageRequest`
for a question with choices and `window/showDocument` for the plan. Answers and
approvals that come back are recorded with the source `lsp:<client name>`.
The engine decides everything else; the tasks live on disk.

Kept whole: the conversation with the person about a task (commands in;
questions, reviews and announcements out) shares one session state per client;
each handler is short.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from autocode.errors import AutoCodeError
from autocode.workspace import WorkspaceInvalid
from autocode_lsp import protocol, workspaces
from autocode_lsp.advice import advise_wire
from autocode_lsp.commands import command
from autocode_lsp.errors import engine_call, invalid_arguments
from autocode_lsp.features import diagnostics, titles
from autocode_lsp.progress import WorkProgress

if TYPE_CHECKING:
    from autocode.tasks import Source, TaskRun, TaskSnapshot
    from autocode_lsp.apply_edit import ClientEditor
    from autocode_lsp.runwatch import RunWatch
    from autocode_lsp.server import AutoCodeServer

log = logging.getLogger("autocode_lsp")

PLAIN_PROMPT = "plain_prompt"
"""`server.state` key of the prompt for clients that did not opt in to `askQuestion`: the
server puts `features.actions.prompt` there, so this module never imports `actions`."""


@dataclass(frozen=True)
class Reply:
    """A reply to a question: the text and how it was given (typed, chosen, acceptedDefault,
    delegated; None lets the engine tell a typed answer from an accepted default)."""

    text: str
    how: str | None

_UNSAFE_IN_SOURCE = re.compile(r"[^\w .@+-]")


@dataclass
class _Session:
    """What this client session has seen and is being asked about."""

    last_sent: dict[str, int] = field(default_factory=dict)
    conversing: set[str] = field(default_factory=set)
    announced: set[tuple[str, int]] = field(default_factory=set)
    known: set[str] | None = None
    starting: int = 0
    """Task starts in flight in this session: a new task heard meanwhile may be its own (the
    watcher can read the run before the engine hands the id back), so it is held until they end."""
    held: list[TaskSnapshot] = field(default_factory=list)
    unasked: set[tuple[str, str]] = field(default_factory=set)
    """(workspace, task id) of prompts that got an error or no reply in time: asked again at the
    person's next interaction (`ask_again`)."""
    watch: RunWatch | None = None
    """What tells this session of task changes made by other processes (while it is connected)."""


def _session(server: AutoCodeServer) -> _Session:
    found = server.state.get("tasks")
    if not isinstance(found, _Session):
        found = server.state["tasks"] = _Session()
    return found


def source_channel(server: AutoCodeServer) -> str:
    """`lsp:<client name>`, with characters the answer ledger does not accept replaced."""
    name = _UNSAFE_IN_SOURCE.sub("-", server.client_name).strip()[:80] or "client"
    return f"lsp:{name}"


def _source(server: AutoCodeServer) -> Source:
    # lazy: not needed by the server's start, which imports this module
    from autocode.tasks import Source

    return Source(channel=source_channel(server), actor=server.client_name)


SESSIONS: weakref.WeakSet[AutoCodeServer] = weakref.WeakSet()
"""Every initialized session of this process (several over TCP/WebSocket): each hears the
changes of the tasks in its folders, whichever session made them."""


def publish(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    """Send `autocode/task/didChange` for a newer revision to this session and to every other
    session of this process that has the task's workspace open (event loop thread only); the
    task's documents' diagnostics and lenses follow in each."""
    _known(server).add(snap.id)
    _publish_one(server, snap)
    diagnostics.task_changed(server, snap)
    workspace = Path(snap.workspace)
    for other in list(SESSIONS):
        if other is server or other.closed:
            continue
        if any(_same_folder(folder, workspace) for folder in workspaces.session_folders(other)):
            other.in_loop(_heard, other, snap)


def _heard(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    """A change another session (or process) made to a task in this session's folders. A task
    this session never saw is said once to a client that does not render snapshots itself."""
    known = _known(server)
    session = _session(server)
    if snap.id not in known and session.starting:
        session.held.append(snap)
        return
    if snap.id not in known:
        known.add(snap.id)
        if not server.opt_in["didChange"] and not snap.done:
            waiting = snap.needs.kind.replace("_", " ") if snap.needs.kind else snap.state.lower()
            server.show(
                f"AutoCode: another editor session started task {snap.id} ('{titles.short(snap.brief)}') "
                f"in {snap.workspace}; it is {'waiting for ' if snap.needs.kind else ''}{waiting}. The "
                "code actions on any file of the workspace show what it needs."
            )
    _publish_one(server, snap)
    diagnostics.task_changed(server, snap)


def _known(server: AutoCodeServer) -> set[str]:
    """The task ids this session has seen (its folders' runs when it joined, and every later one)."""
    session = _session(server)
    if session.known is None:
        session.known = set()
        for folder in workspaces.session_folders(server):
            try:
                session.known.update(entry.name for entry in os.scandir(folder / ".autocode" / "runs"))
            except OSError:
                continue
    return session.known


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _publish_one(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    if not server.opt_in["didChange"] or server.closed:
        return
    session = _session(server)
    task_id, revision = snap.id, snap.revision
    if revision <= session.last_sent.get(task_id, -1):
        return
    session.last_sent[task_id] = revision
    params = protocol.TaskDidChangeParams(task=snap, revision=revision)
    server.protocol.notify(protocol.TASK_DID_CHANGE, advise_wire(protocol.to_wire(params), server.client_name))


# ---------------------------------------------------------------------- engine access


@dataclass
class _Hooks:
    """Callbacks the engine calls from its worker thread."""

    server: AutoCodeServer
    progress: WorkProgress | None = None
    task_id: str | None = None
    cancel_wanted: bool = False

    def on_change(self, snap: TaskSnapshot) -> None:
        self.task_id = snap.id
        _known(self.server).add(snap.id)  # this session's own task is no news to it
        self.server.in_loop(publish, self.server, snap)
        if self.cancel_wanted and not snap.done:
            self.cancel_wanted = False
            _request_cancel(Path(snap.workspace), self.task_id)

    def on_progress(self, phase: str, message: str) -> None:
        if self.progress is not None:
            self.progress.report(f"{phase}: {message}")


def _request_cancel(workspace: Path, task_id: str) -> None:
    # lazy: not needed by the server's start, which imports this module
    from autocode.tasks import TaskRun

    try:
        TaskRun.load(workspace, task_id).cancel()
    except Exception as exc:
        log.info("cancelling task %s did not go through: %s", task_id, exc)


def _find_task(folders: list[Path], task_id: str, hooks: _Hooks) -> TaskRun:
    # lazy: not needed by the server's start, which imports this module
    from autocode.tasks import NoRepository, TaskNotFound, TaskRun

    last: Exception | None = None
    for folder in folders:
        try:
            return TaskRun.load(folder, task_id, on_change=hooks.on_change, progress=hooks.on_progress)
        except (TaskNotFound, NoRepository, WorkspaceInvalid) as exc:
            last = exc
    if len(folders) == 1 and last is not None:
        raise last
    names = ", ".join(str(f) for f in folders)
    raise TaskNotFound(
        f"no task {task_id} in this session's folders ({names}); autocode.task.list shows the tasks"
    )


def _folders_for(server: AutoCodeServer, workspace: str | None, command: str) -> list[Path]:
    if workspace is not None:
        return [workspaces.given_workspace(workspace, server)]
    folders = workspaces.repository_folders(server) or workspaces.session_folders(server)
    if not folders:
        workspaces.resolve(server, None, command=command)  # raises noRepository
    return folders


async def _act(
    server: AutoCodeServer,
    folders: list[Path],
    task_id: str,
    action: Callable[[TaskRun], TaskSnapshot],
    *,
    title: str | None,
) -> TaskSnapshot:
    """Load the task, run `action` on it in a thread (with progress), publish the result."""
    hooks = _Hooks(server, task_id=task_id)
    if title is not None:
        hooks.progress = WorkProgress.start(
            server, title, on_cancel=lambda: _cancel_soon(server, folders, task_id)
        )

    def work() -> TaskSnapshot:
        return action(_find_task(folders, task_id, hooks))

    running = asyncio.ensure_future(engine_call(work))
    try:
        snap = await asyncio.wait_for(asyncio.shield(running), timeout=reply_within_s())
    except TimeoutError:
        # A long phase (implementing, verifying): answer now with what is on disk, so no
        # client's request times out, and announce the outcome when it comes.
        server.spawn(_finish_later(server, running, hooks), f"finishing {task_id}")
        return await engine_call(lambda: _find_task(folders, task_id, _Hooks(server)).snapshot())
    except BaseException:
        if hooks.progress is not None:
            hooks.progress.end("failed")
        raise
    if hooks.progress is not None:
        hooks.progress.end(_state_text(snap))
    publish(server, snap)
    return snap


def reply_within_s() -> float:
    """How long a command may work before it answers with the task as it stands (clients
    such as eglot give up on a request after 10 s)."""
    try:
        return max(0.0, float(os.environ.get("AUTOCODE_LSP_REPLY_WITHIN_S", "8")))
    except ValueError:
        return 8.0


async def _finish_later(server: AutoCodeServer, running: asyncio.Future[TaskSnapshot], hooks: _Hooks) -> None:
    try:
        snap = await running
    except JsonRpcException as exc:
        if hooks.progress is not None:
            hooks.progress.end("failed")
        server.show(f"AutoCode task {hooks.task_id}: {exc.message}", types.MessageType.Error)
        return
    if hooks.progress is not None:
        hooks.progress.end(_state_text(snap))
    publish(server, snap)
    _follow_up(server, snap)


def _cancel_soon(server: AutoCodeServer, folders: list[Path], task_id: str) -> None:
    async def cancel() -> None:
        for folder in folders:
            await engine_call(_request_cancel, folder, task_id)

    server.spawn(cancel(), f"cancel {task_id}")


def _state_text(snap: TaskSnapshot) -> str:
    kind = snap.needs.kind
    if kind:
        return f"waiting: {kind.replace('_', ' ')}"
    return snap.state.lower()


# ---------------------------------------------------------------------- commands


@command(protocol.TASK_START)
async def start(server: AutoCodeServer, args: protocol.TaskStartArgs) -> TaskSnapshot:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.TASK_START)
    manifest = None if args.manifest is None else workspaces.confine_manifest(
        server, args.manifest, workspace, command=protocol.TASK_START
    )
    hooks = _Hooks(server)

    def on_cancel() -> None:
        if hooks.task_id is not None:
            _cancel_soon(server, [workspace], hooks.task_id)
        else:
            hooks.cancel_wanted = True

    first_line = args.brief.strip().splitlines()[0][:60] if args.brief.strip() else "task"
    hooks.progress = WorkProgress.start(
        server, f"AutoCode: {first_line}", "starting", on_cancel=on_cancel
    )

    def work() -> TaskSnapshot:
        # lazy: not needed by the server's start, which imports this module
        from autocode.tasks import TaskOptions, TaskRun
        from autocode_lsp.features.session import task_options

        options = TaskOptions(
            test_command=args.test_command, package=args.package, manifest=manifest,
            on_change=hooks.on_change, progress=hooks.on_progress, **task_options(server),
        )
        return TaskRun.start(workspace, args.brief, options).snapshot()

    session = _session(server)
    session.starting += 1
    try:
        snap = await engine_call(work)
    except BaseException:
        hooks.progress.end("failed to start")
        raise
    finally:
        session.starting -= 1
        if not session.starting:
            held, session.held = session.held, []
            for other in held:  # the start's own task is known by now; another one is news
                _heard(server, other)
    hooks.progress.end(_state_text(snap))
    publish(server, snap)
    _follow_up(server, snap)
    return snap


async def _carry_on(
    server: AutoCodeServer, args: Any, command: str, action: Callable[[TaskRun], TaskSnapshot], title: str
) -> TaskSnapshot:
    """Run a step the person took on a task, then bring what it needs next to them."""
    folders = _folders_for(server, args.workspace, command)
    snap = await _act(server, folders, args.task_id, action, title=title)
    _follow_up(server, snap)
    return snap


@command(protocol.TASK_ANSWER)
async def answer(server: AutoCodeServer, args: protocol.TaskAnswerArgs) -> TaskSnapshot:
    source = _source(server)
    return await _carry_on(
        server, args, protocol.TASK_ANSWER,
        lambda run: run.answer(args.question_id, args.text, source, how=args.how),
        "AutoCode: continuing the task",
    )


@command(protocol.TASK_APPROVE_PLAN)
async def approve_plan(
    server: AutoCodeServer, args: protocol.TaskApprovePlanArgs
) -> TaskSnapshot:
    source = _source(server)
    return await _carry_on(
        server, args, protocol.TASK_APPROVE_PLAN, lambda run: run.approve_plan(args.revision, source),
        "AutoCode: implementing the plan",
    )


@command(protocol.TASK_REJECT_PLAN)
async def reject_plan(
    server: AutoCodeServer, args: protocol.TaskRejectPlanArgs
) -> TaskSnapshot:
    source = _source(server)
    return await _carry_on(
        server, args, protocol.TASK_REJECT_PLAN, lambda run: run.reject_plan(args.feedback, source),
        "AutoCode: planning again",
    )


@command(protocol.TASK_APPROVE_COMPLETION)
async def approve_completion(
    server: AutoCodeServer, args: protocol.TaskApproveCompletionArgs
) -> TaskSnapshot:
    source = _source(server)
    return await _carry_on(
        server, args, protocol.TASK_APPROVE_COMPLETION,
        lambda run: run.approve_completion(source, editor=_editor(server, run.workspace, run.id), confirm=args.confirm,
                                           keep=args.keep),
        "AutoCode: applying the change",
    )


@command(protocol.TASK_RESOLVE_CONFLICTS)
async def resolve_conflicts(
    server: AutoCodeServer, args: protocol.TaskResolveConflictsArgs
) -> TaskSnapshot:
    source = _source(server)
    choices = dict(args.choices)
    return await _carry_on(
        server, args, protocol.TASK_RESOLVE_CONFLICTS,
        lambda run: run.resolve_conflicts(choices, source, editor=_editor(server, run.workspace, run.id)),
        "AutoCode: applying the change",
    )


def _editor(server: AutoCodeServer, workspace: Path, task_id: str | None = None) -> ClientEditor | None:
    """The client's editor applies the change when it declared `workspace.applyEdit`; otherwise
    the server writes the files, unless a touched file has unsaved edits in the editor."""
    if server.loop is None:
        return None
    # lazy: not needed by the server's start, which imports this module
    from autocode_lsp.apply_edit import ClientEditor

    return ClientEditor(server, workspace, can_apply=server.supports_apply_edit, task_id=task_id)


@command(protocol.TASK_CANCEL)
async def cancel(server: AutoCodeServer, args: protocol.TaskRefArgs) -> TaskSnapshot:
    folders = _folders_for(server, args.workspace, protocol.TASK_CANCEL)
    return await _act(server, folders, args.task_id, lambda run: run.cancel(), title=None)


@command(protocol.TASK_RESUME)
async def resume(server: AutoCodeServer, args: protocol.TaskRefArgs) -> TaskSnapshot:
    return await _carry_on(
        server, args, protocol.TASK_RESUME, lambda run: run.resume(), "AutoCode: resuming the task"
    )


@command(protocol.TASK_RETRY_VERIFICATION)
async def retry_verification(server: AutoCodeServer, args: protocol.TaskRefArgs) -> TaskSnapshot:
    source = _source(server)
    return await _carry_on(
        server, args, protocol.TASK_RETRY_VERIFICATION, lambda run: run.retry_verification(source),
        "AutoCode: verifying the change again",
    )


@command(protocol.TASK_PREVIEW)
async def preview(server: AutoCodeServer, args: protocol.TaskPreviewArgs) -> protocol.TaskPreview:
    folders = _folders_for(server, args.workspace, protocol.TASK_PREVIEW)
    given = dict(args.documents or {})

    def work() -> protocol.TaskPreview:
        run = _find_task(folders, args.task_id, _Hooks(server))
        texts = _documents_by_path(server, run.workspace, given)
        return run.preview(texts.get, editor=_editor(server, run.workspace))

    return await engine_call(work)


def _documents_by_path(server: AutoCodeServer, workspace: Path, given: dict[str, str]) -> dict[str, bytes]:
    """The client's texts by workspace-relative path (a `file://` URI mapped and made relative);
    a key that names no file inside the workspace is refused, so nothing else is taken for one."""
    # lazy: only a preview needs it
    from pygls.uris import to_fs_path

    out: dict[str, bytes] = {}
    for key, text in given.items():
        rel = key
        if key.startswith("file:"):
            fs = to_fs_path(key)
            if fs is None:
                raise invalid_arguments(f"documents: {key} is not a file URI; pass a file:// URI or a workspace-relative path")
            try:
                rel = Path(server.path_map.to_server(fs)).resolve().relative_to(workspace.resolve()).as_posix()
            except ValueError:
                raise invalid_arguments(
                    f"documents: {key} is not inside the task's workspace {workspace}; pass only the "
                    "texts of the files the task touches") from None
        out[rel] = text.encode("utf-8", "surrogateescape")
    return out


async def document_saved(server: AutoCodeServer, folder: Path, path: Path) -> None:
    """The person saved a file: a task of the folder waiting for that file to reach the disk
    (`save_files`) reads the disk back, and completes once every file holds its change (a plain
    client is told so)."""

    def waiting() -> list[str]:
        # lazy: not needed by the server's start, which imports this module
        from autocode.tasks import list_tasks

        try:
            rel = path.resolve().relative_to(folder.resolve()).as_posix()
        except ValueError:
            return []
        # A task still APPLYING too: the save may land after it read the disk back and before it
        # says WAITING_FOR_SAVE; `confirm_saved` waits for its lock, then reads the disk again.
        return [s.id for s in list_tasks(folder)
                if s.state == "APPLYING" or (isinstance(s.needs, protocol.SaveFiles) and rel in s.needs.paths)]

    if not (folder / ".autocode" / "runs").is_dir():
        return
    for task_id in await engine_call(waiting):
        snap = await _act(server, [folder], task_id, lambda run: run.confirm_saved(), title=None)
        _follow_up(server, snap)  # a plain client hears that the save completed the task


@command(protocol.TASK_GET)
async def get(server: AutoCodeServer, args: protocol.TaskRefArgs) -> TaskSnapshot:
    folders = _folders_for(server, args.workspace, protocol.TASK_GET)
    return await _act(server, folders, args.task_id, lambda run: run.snapshot(), title=None)


@command(protocol.TASK_TRANSCRIPT)
async def transcript(server: AutoCodeServer, args: protocol.TaskRefArgs) -> protocol.TaskTranscript:
    folders = _folders_for(server, args.workspace, protocol.TASK_TRANSCRIPT)

    def work() -> protocol.TaskTranscript:
        path, text = _find_task(folders, args.task_id, _Hooks(server)).transcript()
        return protocol.TaskTranscript(path=str(path), markdown=text)

    return await engine_call(work)


@command(protocol.TASK_LIST)
async def list_(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> protocol.TaskList:
    folders = _folders_for(server, args.workspace, protocol.TASK_LIST)

    def work() -> list[TaskSnapshot]:
        # lazy: not needed by the server's start, which imports this module
        from autocode.tasks import list_tasks

        found: list[TaskSnapshot] = []
        for folder in folders:
            found.extend(list_tasks(folder))
        return found

    snaps = await engine_call(work)
    snaps.sort(key=lambda s: (s.created, s.id), reverse=True)
    return protocol.TaskList(tasks=snaps)


# ---------------------------------------------------------------------- the conversation


def _follow_up(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    """After a command, bring what the task now needs to the person (in the background)."""
    session = _session(server)
    task_id = snap.id
    if task_id in session.conversing:
        return
    session.conversing.add(task_id)

    async def converse() -> None:
        try:
            await _converse(server, snap)
        finally:
            session.conversing.discard(task_id)

    server.spawn(converse(), f"conversation for {task_id}")


async def _converse(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    folders = [Path(snap.workspace)]
    task_id = snap.id
    source = _source(server)
    while True:
        needs = snap.needs
        try:
            if isinstance(needs, protocol.AnswerQuestions) and needs.questions:
                question = needs.questions[0]
                reply = await _ask(server, snap, question)
                if reply is None:
                    return
                snap = await _act(
                    server, folders, task_id,
                    functools.partial(_answer, question.id, reply.text, reply.how, source),
                    title="AutoCode: continuing the task",
                )
            elif isinstance(needs, protocol.ApprovePlan):
                decision = await _review(server, snap, needs)
                if decision is None:
                    return
                plan_revision = needs.plan_revision
                if decision.decision == "approve":
                    snap = await _act(
                        server, folders, task_id,
                        functools.partial(_approve_plan, plan_revision, source),
                        title="AutoCode: implementing the plan",
                    )
                else:
                    snap = await _act(
                        server, folders, task_id,
                        functools.partial(_reject_plan, decision.feedback or "", source, plan_revision),
                        title="AutoCode: planning again",
                    )
            else:
                _announce(server, snap)
                return
        except JsonRpcException as exc:
            # Answered elsewhere meanwhile, or refused: the snapshot is still on disk. The
            # person acted, so they hear what became of it.
            log.info("task %s: %s", task_id, exc.message)
            server.show(
                f"AutoCode task {task_id}: your reply was not recorded: {exc.message}",
                types.MessageType.Warning,
            )
            return
        except protocol.InvalidArguments as exc:
            log.warning("task %s: the client's reply does not fit the protocol: %s", task_id, exc)
            return


def _answer(question_id: str, text: str, how: str | None, source: Any, run: TaskRun) -> TaskSnapshot:
    return run.answer(question_id, text, source, how=how)


async def answer_with(server: AutoCodeServer, folder: Path, task_id: str, question_id: str, reply: Any) -> None:
    """Record `reply` (text and how it was given), then carry the task on."""
    snap = await _act(
        server, [folder], task_id,
        functools.partial(_answer, question_id, reply.text, reply.how, _source(server)),
        title="AutoCode: continuing the task",
    )
    _follow_up(server, snap)


def _approve_plan(plan_revision: int, source: Any, run: TaskRun) -> TaskSnapshot:
    return run.approve_plan(plan_revision, source)


def _reject_plan(feedback: str, source: Any, plan_revision: int, run: TaskRun) -> TaskSnapshot:
    return run.reject_plan(feedback, source, revision=plan_revision)


async def _ask(server: AutoCodeServer, snap: TaskSnapshot, question: protocol.Question) -> Any:
    """The person's reply or None when there is none yet."""
    if server.opt_in["askQuestion"]:
        params = protocol.AskQuestionParams(task_id=snap.id, revision=snap.revision, question=question)
        raw = await ask_client(server, snap, protocol.TASK_ASK_QUESTION, protocol.to_wire(params))
        if raw is NO_REPLY:
            return None
        result = protocol.structure(_plain(raw), protocol.AskQuestionResult, what="askQuestion's answer")
        if result.how in ("acceptedDefault", "delegated"):
            return Reply(result.answer or "", result.how)
        if not (result.answer and result.answer.strip()):
            log.info("task %s: question %s was closed without an answer; nothing recorded", snap.id, question.id)
            return None
        return Reply(result.answer, result.how)
    # Plain clients: every way to answer, none of them a free-text box they may not have.
    prompt: Callable[..., Any] | None = server.state.get(PLAIN_PROMPT)
    return None if prompt is None else await prompt(server, snap, question)


NO_REPLY = object()
"""What `ask_client` returns when the client answered with an error or not in time."""


def prompt_timeout_s() -> float:
    """How long a prompt (a question, a plan to review) waits for the editor's reply before it
    counts as unanswered and is asked again at the person's next interaction."""
    try:
        return max(0.1, float(os.environ.get("AUTOCODE_LSP_PROMPT_TIMEOUT_S", "900")))
    except ValueError:
        return 900.0


async def ask_client(server: AutoCodeServer, snap: TaskSnapshot, method: str, params: Any) -> Any:
    """Send a prompt request; its result, or NO_REPLY (the prompt is then asked again at the next
    command or code action request: nothing was decided)."""
    sent = server.protocol.send_request(method, params)
    try:
        return await asyncio.wait_for(asyncio.wrap_future(sent), prompt_timeout_s())
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        _give_up(server, sent)
        why = f"no reply in {prompt_timeout_s():g} s"
    except Exception as exc:  # the editor answered with an error (eglot: the person pressed C-g)
        why = f"the editor answered with an error: {getattr(exc, 'message', None) or exc}"
    log.info("task %s: %s got %s; nothing recorded, asked again at the next interaction", snap.id, method, why)
    _session(server).unasked.add((snap.workspace, snap.id))
    return NO_REPLY


def _give_up(server: AutoCodeServer, sent: Any) -> None:
    """Stop waiting for a request: the client is told (`$/cancelRequest`, so it may close its
    prompt) and a late reply is dropped quietly instead of landing on a cancelled future."""
    futures = server.protocol._request_futures  # pygls keeps no other way from a future to its id
    for msg_id, future in list(futures.items()):
        if future is sent:
            futures.pop(msg_id, None)
            server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            break


def ask_again(server: AutoCodeServer) -> None:
    """Prompts that got an error or no reply are asked again (the person is back: they just
    ran a command or opened a menu)."""
    session = _session(server)
    if not session.unasked or server.closed:
        return
    pending, session.unasked = session.unasked, set()

    async def again() -> None:
        def load() -> list[TaskSnapshot]:
            # lazy: not needed by the server's start, which imports this module
            from autocode.tasks import TaskRun

            found = []
            for workspace, task_id in pending:
                try:
                    found.append(TaskRun.load(Path(workspace), task_id).snapshot())
                except AutoCodeError as exc:
                    log.info("task %s is not asked again: %s", task_id, exc)
            return found

        for snap in await engine_call(load):
            if snap.needs.kind:
                _follow_up(server, snap)

    server.spawn(again(), "asking again")


async def _review(
    server: AutoCodeServer, view: TaskSnapshot, needs: protocol.ApprovePlan
) -> protocol.ReviewPlanResult | None:
    if server.opt_in["reviewPlan"]:
        params = protocol.ReviewPlanParams(
            task_id=view.id, revision=view.revision, plan_revision=needs.plan_revision,
            plan=needs.markdown, plan_uri=needs.plan_uri,
        )
        raw = await ask_client(server, view, protocol.TASK_REVIEW_PLAN, protocol.to_wire(params))
        if raw is NO_REPLY:
            return None
        result = protocol.structure(_plain(raw), protocol.ReviewPlanResult, what="reviewPlan's answer")
        if result.decision == "later":
            log.info("task %s: plan revision %s left for later; it still waits", view.id, needs.plan_revision)
            return None
        if result.decision == "reject" and not (result.feedback or "").strip():
            server.show(
                f"AutoCode task {view.id}: a rejected plan needs feedback; plan r{needs.plan_revision} "
                f"still waits: {titles.run(titles.approve_plan(needs.plan_revision, view.brief))}, or "
                f"'{titles.request_changes(needs.plan_revision, view.brief)}' to send it back with your words.",
                types.MessageType.Warning,
            )
            return None
        return result
    if needs.plan_uri and server.path_map:
        await engine_call(_plan_in_client_names, server, view, needs)
    if needs.plan_uri and server.supports_show_document:
        await server.window_show_document_async(
            types.ShowDocumentParams(uri=server.path_map.uri_to_client(needs.plan_uri), take_focus=True)
        )
    where = f" ({needs.plan_uri})" if needs.plan_uri else ""
    server.show(
        f"AutoCode task {view.id}: plan revision {needs.plan_revision} is ready for review{where}. "
        f"To approve it, {titles.run(titles.approve_plan(needs.plan_revision, view.brief))}; to send "
        f"it back, '{titles.request_changes(needs.plan_revision, view.brief)}'."
    )
    return None


def _plan_in_client_names(server: AutoCodeServer, view: TaskSnapshot, needs: protocol.ApprovePlan) -> None:
    """plan.md as the person will read it: the engine wrote it with the server's paths."""
    # lazy: not needed by the server's start, which imports this module
    from autocode_lsp import documents

    documents.write(Path(view.run_dir), documents.PLAN, server.path_map.text_to_client(needs.markdown))


def _announce(server: AutoCodeServer, snap: TaskSnapshot) -> None:
    """Tell a plain client what the task waits for or how it ended (once per revision)."""
    if server.opt_in["didChange"]:
        return  # opted-in clients render the snapshots themselves
    session = _session(server)
    key = (snap.id, snap.revision)
    if key in session.announced:
        return
    session.announced.add(key)
    needs = snap.needs
    moved = needs.head_moved if isinstance(needs, protocol.ApproveCompletion | protocol.ResolveConflicts) else None
    head_note = (
        f" Note: HEAD moved since the task started ({str(moved.from_)[:12]} -> "
        f"{str(moved.to)[:12]}); the change is merged into the files as they are now."
        if moved else ""
    )
    if isinstance(needs, protocol.ApproveCompletion):
        if needs.apply is not None and needs.apply.message:
            server.show(f"AutoCode task {snap.id}: {needs.apply.message}", types.MessageType.Warning)
        server.show(
            f"AutoCode task {snap.id} is verified. Review the change ('{titles.review_changes(snap.brief)}'), "
            f"then to apply it, {titles.run(_apply_title(snap, needs))}.{head_note}"
        )
    elif isinstance(needs, protocol.SaveFiles):
        marked = [p for p in needs.paths if needs.apply.choices.get(p) == "markers"]
        markers_note = (f" {', '.join(marked)} {'holds' if len(marked) == 1 else 'hold'} conflict markers: "
                        "resolve them before or after you save." if marked else "")
        server.show(
            f"AutoCode task {snap.id}: the change is in your editor (any unsaved edits of yours kept), not on "
            f"disk yet; save "
            f"{', '.join(needs.paths)} to complete it (the server reads the files back from disk).{markers_note}",
            types.MessageType.Warning,
        )
    elif isinstance(needs, protocol.ResolveConflicts):
        paths = ", ".join(c.path for c in needs.conflicts)
        server.show(
            f"AutoCode task {snap.id}: you and the task both changed {paths}; nothing was "
            f"written. Choose per file with {protocol.TASK_RESOLVE_CONFLICTS} (taskId {snap.id}, "
            f'choices {{"<path>": "mine" | "theirs" | "markers"}}).{head_note}',
            types.MessageType.Warning,
        )
    elif snap.done:
        state = snap.state.lower()
        error = snap.error.message if snap.error else None
        kind_of = types.MessageType.Error if state == "failed" else types.MessageType.Info
        way_out = ""
        if snap.error is not None and snap.error.phase == "verifying":
            way_out = (" Once the environment or the test command is fixed, run the code action "
                       "'AutoCode: retry verification' to prove the same change again.")
        server.show(f"AutoCode task {snap.id} {state}" + (f": {error}" if error else ".") + way_out, kind_of)
    elif snap.state == "INTERRUPTED":
        server.show(
            f"AutoCode task {snap.id} was interrupted while {str(snap.interrupted_in).lower()} (its "
            "process stopped); run the code action 'AutoCode: resume' to go on.", types.MessageType.Warning)


# ---------------------------------------------------------------------- re-announcing


_REAPED: list[bool] = []
"""Once per process: the first session ends what a killed server left running."""


def _reap() -> Any:
    # lazy: imported in engine_call's worker, which waits for the warm-up first (an import on the
    # event loop beside the warm-up thread is the start-up race test_server_warmup_imports guards)
    from autocode.sandbox import reap_orphans

    return reap_orphans()


async def _reap_orphans() -> None:
    ended = await engine_call(_reap)
    if ended:
        log.info("ended %d process group(s) a stopped AutoCode process left running: %s", len(ended), ended)


def _apply_title(snap: TaskSnapshot, needs: protocol.ApproveCompletion) -> str:
    unproven = (needs.proof.status if needs.proof else "unproven") if needs.confirmation else None
    return titles.apply_changes(snap.brief, unproven)


def joined(server: AutoCodeServer, folders: list[Path] | None = None) -> None:
    """A session started (`initialized`) or opened more folders: it hears every later change, and
    every task waiting there for a person is announced to it again (in the background)."""
    if server not in SESSIONS:
        _known(server)  # what is there now is not news
        server.spawn(_watch_other_processes(server), "notice task changes made by other processes")
    elif folders is not None and (watch := _session(server).watch) is not None:
        watch.follow(folders)
    if not SESSIONS and not _REAPED:
        _REAPED.append(True)
        server.spawn(_reap_orphans(), "end the programs a killed server left running")
    SESSIONS.add(server)
    wanted = folders if folders is not None else workspaces.session_folders(server)
    # Cheap before the engine loads: only folders that hold task runs at all.
    with_runs = [f for f in wanted if (f / ".autocode" / "runs").is_dir()]
    if with_runs:
        server.spawn(_reannounce(server, with_runs), "re-announce waiting tasks")


def _snapshots_of(changed: list[tuple[Path, str]]) -> list[TaskSnapshot]:
    # lazy: not needed by the server's start, which imports this module
    from autocode.tasks import TaskRun

    found: list[TaskSnapshot] = []
    for folder, task_id in changed:
        try:
            found.append(TaskRun.load(folder, task_id).snapshot())
        except (AutoCodeError, ValueError, OSError) as exc:  # not a task (yet), or being written: its next change is seen
            log.debug("task %s in %s not read: %s", task_id, folder, exc)
        except Exception:  # the engine failed: said as such, not taken for a run being written
            log.error("reading task %s in %s failed", task_id, folder, exc_info=True)
    return found


async def _watch_other_processes(server: AutoCodeServer) -> None:
    """While the session is connected, publish task changes that another process made in its
    folders, as this process publishes its own. `RunWatch` says which runs changed (as they change,
    with inotify; where that is not to be had, by a look once a second); only those are read, in the
    engine's thread, and `_publish_one` drops revisions already sent (this process's own among them)."""
    # lazy: not needed by the server's `initialize`
    from autocode_lsp.runwatch import RunWatch

    watch = RunWatch(workspaces.session_folders(server))
    _session(server).watch = watch
    try:
        while not server.closed:
            found = await watch.changed()
            folders = set(workspaces.session_folders(server))  # a folder closed since is no longer heard
            changed = sorted(run for run in found if run[0] in folders)
            if not changed:
                continue
            for snap in sorted(await engine_call(_snapshots_of, changed), key=lambda s: s.created):
                _heard(server, snap)
    finally:
        _session(server).watch = None
        watch.close()


async def _reannounce(server: AutoCodeServer, folders: list[Path]) -> None:
    def waiting() -> list[TaskSnapshot]:
        # lazy: not needed by the server's start, which imports this module
        from autocode.tasks import list_tasks

        found: list[TaskSnapshot] = []
        for folder in folders:
            try:
                # Waiting for the person, or left interrupted by a process that stopped (a way out: resume).
                found.extend(s for s in list_tasks(folder) if s.needs.kind or s.state == "INTERRUPTED")
            except AutoCodeError as exc:  # e.g. a folder that is not a repository: it has no tasks
                log.info("no tasks listed in %s: %s", folder, exc)
            except Exception:  # the engine failed: not an empty list, and never said as one
                log.error("listing the waiting tasks in %s failed; they are not announced again", folder,
                          exc_info=True)
        return found

    snaps = await engine_call(waiting)
    for snap in sorted(snaps, key=lambda s: s.created):
        if server.closed:
            return
        _known(server).add(snap.id)
        _publish_one(server, snap)
        diagnostics.task_changed(server, snap)
        _follow_up(server, snap)


def _plain(value: Any) -> Any:
    """A client's reply as plain JSON data (pygls may hand back generic objects)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return _plain(value._asdict())
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return _plain(vars(value))
    return value
