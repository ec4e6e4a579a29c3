"""The task tools: start a task, read its status and evidence, answer a question as delegated.

An agent may start a task in the server's workspace and follow it; it may answer a question
only as `delegated` (the task decides, and the ledger says an agent, not the person, gave it:
never learned). Nothing here approves a plan or a completion, resolves a conflict or confirms
an unproven change: a call that tries (an approving tool name, an answer while the task waits
for an approval, an answer `how` other than delegated) is refused with where the person
approves, in the editor or with the `autocode task` CLI. The engine decides everything else,
exactly as for the CLI and the language server (`autocode.tasks.TaskRun`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations

from autocode_mcp import replies

if TYPE_CHECKING:
    from autocode.tasks import TaskRun, TaskSnapshot
    from autocode_mcp.app import AutoCodeMCP, Face

log = logging.getLogger("autocode_mcp")

EVENTS_SHOWN = 20
"""The newest events task_evidence returns (the whole log is events.jsonl in the run folder)."""

PERSON_ONLY = ("approve_plan", "approve_completion", "resolve_conflicts")
"""What a task may wait for that only the person can give."""


def reply_within_s() -> float:
    """How long start_task and answer_question work before answering with the task as it stands
    (the task carries on; task_status follows it). MCP clients time a tool call out."""
    try:
        return max(0.0, float(os.environ.get("AUTOCODE_MCP_REPLY_WITHIN_S", "30")))
    except ValueError:
        return 30.0


def _source(face: Face, ctx: Context[Any, Any] | None) -> Any:
    # lazy: the tasks engine loads with the first task call
    from autocode.tasks import Source

    return Source(channel=face.channel_for(ctx), actor=face.actor_for(ctx))


def where_to_approve(root: Path, snap: dict[str, Any] | None) -> str:
    """Where the person decides what `snap` waits for (both places when no task is named)."""
    if snap is None:
        return (
            "The person approves in their editor (the AutoCode code actions \"approve plan\" and "
            "\"apply the changes\", or the task view) or in a terminal: "
            f"`autocode task approve --workspace {root} TASK --revision N` for a plan, "
            f"`autocode task approve-completion --workspace {root} TASK` for a finished change."
        )
    needs, task = snap["needs"], snap["id"]
    brief = " ".join((snap.get("brief") or "").split())[:40]
    if needs["kind"] == "approve_plan":
        revision = needs["planRevision"]
        return (
            f"The person approves plan revision {revision} in their editor (code action \"AutoCode: "
            f"approve plan r{revision} of '{brief}…'\") or in a terminal: "
            f"`autocode task approve --workspace {root} {task} --revision {revision}`."
        )
    if needs["kind"] == "approve_completion":
        confirm = needs.get("confirmation")
        flag = f" --confirm {confirm}" if confirm else ""
        return (
            f"The person applies the change in their editor (code action \"AutoCode: apply the changes "
            f"of '{brief}…'\") or in a terminal: `autocode task approve-completion --workspace {root} "
            f"{task}{flag}`."
        )
    if needs["kind"] == "resolve_conflicts":
        return (
            "The person chooses per conflicted file in their editor or in a terminal: "
            f"`autocode task resolve --workspace {root} {task} PATH=mine|theirs|markers`."
        )
    return where_to_approve(root, None)


def approval_refusal(face: Face, task_id: Any, *, tried: str) -> CallToolResult:
    """The refusal of an attempt to decide for the person, naming where they decide."""
    snap = None
    if isinstance(task_id, str):
        try:
            snap = _load(face, task_id).snapshot().wire()
        except Exception:  # an unknown or unreadable task: the general answer names both places
            snap = None
    return replies.failed(
        "approvalRefused",
        f"{tried}: AutoCode's MCP server does not approve, reject, apply or confirm anything; those "
        f"decisions are the person's. {where_to_approve(face.root, snap)}",
        taskId=snap["id"] if snap else None,
    )


def summary(root: Path, snap: dict[str, Any]) -> str:
    """One paragraph for the model: where the task is and what may happen next."""
    head = f"task {snap['id']}: {snap['state']}"
    needs = snap["needs"]
    kind = needs.get("kind")
    if kind == "answer_questions":
        asked = "; ".join(f"[{q['id']}] {q['text']}" for q in needs.get("questions", []))
        return (
            f"{head}; it asks: {asked}. The person can answer in their editor or terminal; "
            "answer_question records an agent's answer as delegated (the task decides)."
        )
    if kind in PERSON_ONLY:
        return f"{head}; it waits for the person. {where_to_approve(root, snap)}"
    result = snap.get("result") or {}
    if snap.get("done"):
        return f"{head} ({result.get('status') or 'done'})."
    return f"{head}; still working: task_status follows it."


def _load(face: Face, task_id: str) -> TaskRun:
    # lazy: the tasks engine loads with the first task call
    from autocode.tasks import TaskRun

    return TaskRun.load(face.root, task_id)


def confined(face: Face, text: str, what: str) -> Path | CallToolResult:
    """`text` (relative to the workspace, or absolute) if it lies inside the workspace (links
    resolved); else a refusal that is the same whether anything is there or not."""
    path = Path(text) if Path(text).is_absolute() else face.root / text
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(face.root))
    if real == root or real.is_relative_to(root):
        return path
    return replies.failed(
        "pathOutsideWorkspace",
        f"{what} must lie inside the workspace {face.root} (this server was started there); "
        "pass a path inside it",
    )


class _Follow:
    """The task's newest snapshot, as the engine commits it from the worker thread."""

    def __init__(self) -> None:
        self.latest: TaskSnapshot | None = None
        self.first = threading.Event()

    def on_change(self, snap: TaskSnapshot) -> None:
        self.latest = snap
        self.first.set()


async def _until_reply(work: Any, follow: _Follow) -> Any:
    """The work's snapshot when it finishes within `reply_within_s`, else the newest one so far
    (the work carries on in its thread)."""
    running = asyncio.ensure_future(asyncio.to_thread(work))
    running.add_done_callback(_log_late_failure)
    try:
        return await asyncio.wait_for(asyncio.shield(running), timeout=reply_within_s())
    except TimeoutError:
        first = asyncio.ensure_future(asyncio.to_thread(follow.first.wait))
        await asyncio.wait({running, first}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():
            first.cancel()
            follow.first.set()  # the waiting thread ends
            return running.result()
        return follow.latest


def _log_late_failure(done: asyncio.Future[Any]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.warning("a task step failed after its tool call answered: %s", done.exception())


def register(server: AutoCodeMCP, face: Face) -> None:
    root = face.root

    def reply(snap: TaskSnapshot) -> CallToolResult:
        data: dict[str, Any] = snap.wire()
        return replies.ok(data, summary(root, data))

    @server.tool(
        description=(
            "Start a coding task in this repository. It asks what it cannot know, plans, and waits for "
            "the person to approve the plan before it changes anything (in a checked copy, proved by "
            "the project's tests); the person also approves applying the change. Returns the task's "
            "snapshot; follow it with task_status."
        ),
    )
    async def start_task(
        brief: str,
        test_command: str | None = None,
        package: str | None = None,
        manifest: str | None = None,
    ) -> CallToolResult:
        manifest_path = None
        if manifest is not None:
            found = confined(face, manifest, "manifest")
            if isinstance(found, CallToolResult):
                return found
            manifest_path = found
        if package is not None:
            checked = confined(face, package, "package")
            if isinstance(checked, CallToolResult):
                return checked
        follow = _Follow()

        def work() -> TaskSnapshot:
            # lazy: the tasks engine loads with the first task call
            from autocode.tasks import TaskOptions, TaskRun

            options = TaskOptions(
                test_command=test_command, package=package, manifest=manifest_path, on_change=follow.on_change,
            )
            return TaskRun.start(root, brief, options).snapshot()

        async def run() -> CallToolResult:
            snap = await _until_reply(work, follow)
            return reply(snap)

        return await _engine_async(run)

    @server.tool(
        description="A task's snapshot: its state, what it needs next (and from whom), its result.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def task_status(task_id: str) -> CallToolResult:
        return await replies.engine(lambda: reply(_load(face, task_id).snapshot()))

    @server.tool(
        description=(
            "Everything recorded about a task: the snapshot, every question and answer (with how it was "
            "given), the plan, the approvals, the test run and proof, the apply result, the newest events."
        ),
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def task_evidence(task_id: str) -> CallToolResult:
        def work() -> CallToolResult:
            details = _load(face, task_id).details()
            events = details.pop("events", [])
            details["events"] = events[-EVENTS_SHOWN:]
            details["eventCount"] = len(events)
            return replies.ok(details, summary(root, details["snapshot"]))

        return await replies.engine(work)

    @server.tool(
        description="This repository's tasks, newest first.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def list_tasks() -> CallToolResult:
        def work() -> CallToolResult:
            # lazy: the tasks engine loads with the first task call
            from autocode.tasks import list_tasks as engine_list
            from autocode.tasks.models import TaskList

            found = list(reversed(engine_list(root)))  # newest first: ids sort by their start time
            return replies.ok(TaskList(tasks=found).wire(), f"{len(found)} task(s)")

        return await replies.engine(work)

    @server.tool(
        description=(
            "Answer a task's question on the person's behalf as delegated: the task decides (TEXT, if "
            "given, is the value proposed to it). The ledger records it as an agent's answer, never the "
            "person's, and it is never learned. `how` can only be delegated. Approvals are not answers: "
            "a task waiting for plan or completion approval waits for the person."
        ),
    )
    async def answer_question(
        task_id: str,
        question_id: str,
        ctx: Context,
        text: str = "",
        how: Literal["delegated", "typed", "chosen", "acceptedDefault"] = "delegated",
    ) -> CallToolResult:
        if how != "delegated":
            return replies.failed(
                "delegatedOnly",
                f"answer_question records an agent's answer as delegated only, never as {how} (the "
                "person's own answer): the person answers in their editor or with "
                f"`autocode task answer --workspace {root} {task_id[:128]} {question_id[:128]} \"...\"`",
            )
        source = _source(face, ctx)
        follow = _Follow()

        def check() -> CallToolResult | None:
            snap = _load(face, task_id).snapshot().wire()
            if snap["needs"].get("kind") in PERSON_ONLY:
                return approval_refusal(face, task_id, tried="answer_question")
            return None

        def work() -> TaskSnapshot:
            # lazy: the tasks engine loads with the first task call
            from autocode.tasks import TaskRun

            task = TaskRun.load(root, task_id, on_change=follow.on_change)
            return task.answer(question_id, text, source, how="delegated")

        async def run() -> CallToolResult:
            refused = await asyncio.to_thread(check)
            if refused is not None:
                return refused
            return reply(await _until_reply(work, follow))

        return await _engine_async(run)


async def _engine_async(run: Any) -> CallToolResult:
    """`run()` with engine errors turned into tool errors."""
    try:
        result: CallToolResult = await run()
    except Exception as exc:
        converted = replies.from_exception(exc)
        if converted is None:
            raise
        return converted
    return result
