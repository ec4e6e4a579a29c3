"""Every task step from a client that knows nothing of AutoCode: code actions on any document,
files in the run folder, forms the person saves, and a prompt that offers every way to answer.

The clients here declare no capabilities at all (only `workspace/executeCommand`, which every
client has), or only `window/showDocument`. No id is ever typed: each step is the command of
a code action the server offered.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp.client import make_test_lsp_client
from test_server_tasks_flow import NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support import git
from support.lsp import Session, close, connect, logged, server_command, wait_until

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

BRIEF = "Make greet() say goodbye too: apply change.patch"


async def start_bare(
    tmp_path_factory: pytest.TempPathFactory, *, show_document: bool, name: str
) -> tuple[Session, Path]:
    repo = build_repo(tmp_path_factory.mktemp(name) / "project")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    caps = types.ClientCapabilities()
    if show_document:
        caps.window = types.WindowClientCapabilities(
            show_document=types.ShowDocumentClientCapabilities(support=True)
        )
    await s.client.initialize_session(types.InitializeParams(
        capabilities=caps,
        client_info=types.ClientInfo(name="Bare", version="test"),
        workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
        root_uri=repo.as_uri(),
    ))
    return s, repo


@pytest_asyncio.fixture(scope="module")
async def bare(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Session, Path]]:
    s, repo = await start_bare(tmp_path_factory, show_document=False, name="bare")
    yield s, repo
    await close(s)


@pytest_asyncio.fixture(scope="module")
async def opener(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Session, Path]]:
    s, repo = await start_bare(tmp_path_factory, show_document=True, name="opener")
    yield s, repo
    await close(s)


async def actions(session: Session, repo: Path, document: str = "greet.py") -> list[types.CodeAction]:
    uri = (repo / document).as_uri()
    found = await session.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[]),
    ))
    return [_as_code_action(a) for a in found or []]


def _as_code_action(item: types.Command | types.CodeAction) -> types.CodeAction:
    """lsprotocol's client-side converter reads any item with a `command` key as a Command,
    though a CodeAction carries its Command there too; editors read the JSON as it is. Undo
    that here: the Command's `command` then holds the CodeAction's command object as text."""
    if isinstance(item, types.CodeAction):
        return item
    inner = ast.literal_eval(item.command)
    assert isinstance(inner, dict), item
    return types.CodeAction(
        title=item.title, kind="source.autocode.?",
        command=types.Command(title=inner["title"], command=inner["command"], arguments=inner.get("arguments")),
    )


async def run_action(session: Session, repo: Path, starts_with: str) -> Any:
    """Pick the code action whose title starts with `starts_with` and run its command, as a
    person choosing it from the editor's menu would."""
    offered = await actions(session, repo)
    chosen = [a for a in offered if a.title.startswith(starts_with)]
    assert chosen, f"no action {starts_with!r} among {[a.title for a in offered]}"
    command = chosen[0].command
    assert command is not None
    return await session.command(command.command, *(command.arguments or []))


async def save(session: Session, path: Path, text: str, *, notify: bool = True) -> None:
    """The person writes `text` into the file and saves it. `notify=False`: an editor that
    sends no `didSave` for this kind of file (the server notices the save on disk)."""
    path.write_text(text, encoding="utf-8")
    if notify:
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
        )


def fill(form: str, values: dict[str, str]) -> str:
    """Write each value under the comment of its field (as a person would type it)."""
    out = []
    for line in form.splitlines():
        out.append(line)
        for key, value in values.items():
            if line.startswith(f"<!-- autocode:{key} "):
                out.append(value)
    return "\n".join(out) + "\n"


async def task_state(session: Session, repo: Path) -> dict[str, Any]:
    listed = await session.command(protocol.TASK_LIST, {"workspace": str(repo)})
    return dict(listed["tasks"][0])


async def wait_for_need(session: Session, repo: Path, kind: str, timeout: float = 60) -> dict[str, Any]:
    latest: dict[str, Any] = {}

    async def poll() -> None:
        nonlocal latest
        while True:
            listed = await session.command(protocol.TASK_LIST, {"workspace": str(repo)})
            if listed["tasks"]:
                latest = listed["tasks"][0]
                if latest["needs"]["kind"] == kind or latest["done"]:
                    return
            await asyncio.sleep(0.1)

    await asyncio.wait_for(poll(), timeout=timeout)
    assert latest["needs"]["kind"] == kind, latest
    return latest


async def test_without_any_capability_every_step_is_a_code_action(bare: tuple[Session, Path]) -> None:
    session, repo = bare
    # Before any task: start, doctor, verifying the person's own changes and memory search are
    # offered on any file.
    titles = [a.title for a in await actions(session, repo)]
    assert titles == [
        "AutoCode: start a task…", "AutoCode: doctor", "AutoCode: verify my changes", "AutoCode: search memories…",
    ]

    # Start: the brief form opens (by name: this client cannot open documents).
    opened = await run_action(session, repo, "AutoCode: start a task")
    form = Path(opened["path"])
    assert opened["shown"] is False and form.name == "new-task.md"
    assert form.parent == repo / ".autocode" / "runs"
    await wait_until(lambda: any(str(form) in m.message for m in session.client.messages))
    # Saving the untouched form starts nothing (the server says it read it).
    read, idle = logged(session, "new-task.md saved (didSave): "), logged(session, "new-task.md saved (didSave): nothing")
    await save(session, form, form.read_text(encoding="utf-8"))
    await wait_until(lambda: logged(session, "new-task.md saved (didSave): ") > read, what="the untouched form read")
    assert logged(session, "new-task.md saved (didSave): nothing") == idle + 1
    assert (await session.command(protocol.TASK_LIST, {"workspace": str(repo)}))["tasks"] == []
    await save(session, form, fill(form.read_text(encoding="utf-8"), {"brief": BRIEF}))
    snap = await wait_for_need(session, repo, "answer_questions")
    assert snap["brief"] == BRIEF
    # The form is empty again for the next task; saving the same brief again starts nothing new.
    await wait_until(lambda: "Make greet()" not in form.read_text(encoding="utf-8"), what="an empty form")
    taken = logged(session, "new-task.md saved (didSave): already taken")
    await save(session, form, fill(form.read_text(encoding="utf-8"), {"brief": BRIEF}))
    await wait_until(lambda: logged(session, "new-task.md saved (didSave): already taken") > taken,
                     what="the same brief read again")
    assert len((await session.command(protocol.TASK_LIST, {"workspace": str(repo)}))["tasks"]) == 1

    # Answer: the prompt offers every way; the person answers in a file.
    session.choose = lambda params: "Answer in a file…"
    question = snap["needs"]["questions"][0]
    await run_action(session, repo, "AutoCode: answer '")
    answers = Path(snap["runDir"]) / "answers.md"
    await wait_until(answers.is_file, what="answers.md")
    request = session.message_requests[-1]
    assert [a.title for a in request.actions or []] == [
        "Answer in a file…", "Accept the proposed default (not remembered)", "Let AutoCode decide",
    ]
    text = answers.read_text(encoding="utf-8")
    assert question["text"] in text and f"autocode:{question['id']}" in text
    # The default is shown in the form but never taken unless written.
    idle = logged(session, "answers.md saved (didSave): nothing")
    await save(session, answers, text)
    await wait_until(lambda: logged(session, "answers.md saved (didSave): nothing") > idle,
                     what="the form without an answer read")
    assert (await task_state(session, repo))["needs"]["kind"] == "answer_questions"
    await save(session, answers, fill(text, {question["id"]: NAMING_ANSWER}), notify=False)
    snap = await wait_for_need(session, repo, "approve_plan")
    ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
    assert [(a["kind"], a["text"]) for a in ledger["answers"]] == [("human", NAMING_ANSWER)]

    # Review the plan, send it back through feedback.md, approve the new revision.
    titles = [a.title for a in await actions(session, repo)]
    revision = snap["needs"]["planRevision"]
    assert f"AutoCode: approve plan r{revision} of '{BRIEF}'" in titles
    plan = await run_action(session, repo, "AutoCode: review plan")
    assert Path(plan["path"]).name == "plan.md" and "Plan" in Path(plan["path"]).read_text()
    feedback = Path((await run_action(session, repo, "AutoCode: request changes"))["path"])
    await save(session, feedback, fill(feedback.read_text(encoding="utf-8"), {"feedback": "Touch greet.py only."}))
    await wait_until(lambda: any("went back" in m.message for m in session.client.messages), timeout=60)
    snap = await wait_for_need(session, repo, "approve_plan")
    assert snap["needs"]["planRevision"] > revision
    await run_action(session, repo, f"AutoCode: approve plan r{snap['needs']['planRevision']}")
    snap = await wait_for_need(session, repo, "approve_completion")

    # Review the change as a real file, then apply it.
    changes = Path((await run_action(session, repo, "AutoCode: review the changes"))["path"])
    assert changes.name == "changes.diff" and "+    return 'hello and goodbye'" in changes.read_text()
    assert snap["needs"]["proof"]["status"] == "verified"  # change.patch carries its proving test
    done = await run_action(session, repo, "AutoCode: apply the changes")
    assert done["state"] == "COMPLETED"
    assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")
    # Only the start form, nothing of the task, is left to act on.
    assert (await actions(session, repo))[0].title == "AutoCode: start a task…"
    # The forms and documents stay out of git: only the shareable files show up.
    status = git(repo, "status", "--porcelain", "--untracked-files=all", "--", ".autocode")
    assert sorted(line[3:] for line in status.splitlines()) == [
        ".autocode/.gitignore", ".autocode/config.toml", ".autocode/project.json",
    ]


async def test_doctor_and_memory_search_open_as_files(opener: tuple[Session, Path]) -> None:
    session, repo = opener
    doctor = await run_action(session, repo, "AutoCode: doctor")
    assert doctor["shown"] is True
    assert session.client.shown_documents[-1].uri == Path(doctor["path"]).as_uri()
    assert "test_command" in Path(doctor["path"]).read_text(encoding="utf-8")

    await session.command(protocol.MEMORY_SAVE, {
        "content": "The greeting tests run with unittest discover", "workspace": str(repo), "scope": "project",
    })
    form = Path((await run_action(session, repo, "AutoCode: search memories"))["path"])
    await save(session, form, fill(form.read_text(encoding="utf-8"), {"query": "greeting tests"}))
    results = form.parent / "memory-results.md"
    await wait_until(results.is_file, what="memory-results.md")
    assert "unittest discover" in results.read_text(encoding="utf-8")
    await wait_until(lambda: session.client.shown_documents[-1].uri == results.as_uri())


async def test_a_dismissed_prompt_is_asked_again_and_each_button_records_its_kind(
    opener: tuple[Session, Path],
) -> None:
    session, repo = opener
    session.choose = lambda params: None  # dismissed
    started = await session.command(protocol.TASK_START, {"brief": BRIEF, "workspace": str(repo)})
    await wait_until(lambda: session.message_requests, what="the first prompt")
    asked = len(session.message_requests)
    await wait_until(lambda: logged(session, f"task {started['id']}: question", "dismissed; nothing recorded"),
                     what="the dismissal handled")
    assert (await session.command(protocol.TASK_GET, {"taskId": started["id"]}))["needs"]["kind"] == "answer_questions"

    # The next interaction (the editor asking for code actions) asks again.
    session.choose = lambda params: "Let AutoCode decide"
    await actions(session, repo)
    snap = await wait_for_need(session, repo, "approve_plan")
    assert len(session.message_requests) == asked + 1
    ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
    assert [a["kind"] for a in ledger["answers"]] == ["delegated"]
    # A plan shown to a client that can open documents opens as a file with code lenses.
    plan_uri = Path(snap["runDir"], "plan.md").as_uri()
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=plan_uri))
    )
    assert [lens.command.title for lens in lenses or [] if lens.command] == [
        f"Approve plan r{snap['needs']['planRevision']}",
        f"Request changes to plan r{snap['needs']['planRevision']}",
        "Cancel",
    ]
    await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    assert (await actions(session, repo))[0].title == "AutoCode: start a task…"


async def test_actions_outside_the_session_and_for_finished_work_say_what_to_do(
    opener: tuple[Session, Path], tmp_path: Path
) -> None:
    session, repo = opener
    elsewhere = tmp_path / "other.py"
    elsewhere.write_text("x = 1\n")
    assert await actions(session, tmp_path, "other.py") == []
    listed = await session.command(protocol.TASK_LIST, {"workspace": str(repo)})
    finished = listed["tasks"][0]["id"]
    err = await session.command_error(protocol.TASK_REVIEW, {"taskId": finished, "workspace": str(repo)})
    assert err.data["kind"] == "notAwaitingInput" and "code actions" in err.message


@pytest_asyncio.fixture(scope="module")
async def crowded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Session, Path]]:
    """A client that sends six folders that are not repositories and one that is (eglot started
    from a scratch buffer does this)."""
    base = tmp_path_factory.mktemp("crowded")
    others = []
    for i in range(6):
        other = base / f"notes-{i}"
        other.mkdir()
        others.append(other)
    repo = build_repo(base / "project")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    folders = [*others[:3], repo, *others[3:]]
    await s.client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        client_info=types.ClientInfo(name="Crowded", version="test"),
        workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
    ))
    yield s, repo
    await close(s)


async def test_folders_that_are_not_repositories_are_left_out(crowded: tuple[Session, Path]) -> None:
    session, repo = crowded
    session.choose = lambda params: None
    # No workspace argument: the only repository among the seven folders is the one.
    started = await session.command(protocol.TASK_START, {"brief": BRIEF})
    assert Path(started["workspace"]) == repo
    listed = await session.command(protocol.TASK_LIST)
    assert [t["id"] for t in listed["tasks"]] == [started["id"]]
    # A command without taskId acts on the one task that fits, or lists the candidates.
    got = await session.command(protocol.TASK_GET)
    assert got["id"] == started["id"]
    err = await session.command_error(protocol.TASK_APPROVE_PLAN)
    assert err.data["kind"] == "taskChoiceNeeded"
    assert err.data["tasks"] == [{
        "taskId": started["id"], "brief": BRIEF, "workspace": str(repo), "waitingFor": "answer_questions",
    }]
    assert "taskId" in err.message and "--" not in err.message
    # Engine errors name LSP commands and arguments, never CLI flags.
    missing = await session.command_error(protocol.TASK_GET, {"taskId": "t-20990101-000000-abcdef", "workspace": str(repo)})
    assert missing.data["kind"] == "taskNotFound"
    assert "autocode.task.list" in missing.message and "--workspace" not in missing.message
    await session.command(protocol.TASK_CANCEL)
    err = await session.command_error(protocol.TASK_CANCEL)
    assert err.data["kind"] == "taskChoiceNeeded" and err.data["tasks"] == []


async def test_paths_are_mapped_across_a_container_boundary(tmp_path: Path) -> None:
    """The editor names the repository `editor-view/project`; the server sees it at
    `server-side/project` (a symlink stands in for the bind mount, so both names work here)."""
    real = build_repo(tmp_path / "server-side" / "project")
    (real / ".autocode").mkdir(exist_ok=True)
    (real / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')
    (tmp_path / "editor-view").mkdir()
    seen = tmp_path / "editor-view" / "project"
    seen.symlink_to(real)
    log_file = tmp_path / "lsp.log"
    client = make_test_lsp_client()
    await client.start_io(*server_command(log_file, "--path-map", f"{seen}={real}"))
    session = Session(client=client, process=None, transport="stdio")
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            client_info=types.ClientInfo(name="Mapped", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=seen.as_uri(), name="project")],
        ))
        info = await session.command(protocol.PROTOCOL_INFO)
        assert info["workspaces"] == [str(seen)]
        opened = await run_action(session, seen, "AutoCode: start a task")
        assert opened["path"] == str(seen / ".autocode" / "runs" / "new-task.md")
        form = Path(opened["path"])
        await save(session, form, fill(form.read_text(encoding="utf-8"), {"brief": BRIEF}))
        snap = await wait_for_need(session, seen, "answer_questions")
        assert snap["workspace"] == str(seen) and snap["runDir"].startswith(str(seen))
        assert str(real) not in json.dumps(snap)
        # A path outside the map is refused, naming both sides.
        err = await session.command_error(protocol.TASK_LIST, {"workspace": str(tmp_path / "elsewhere")})
        assert err.code == -32602 and str(seen) in err.message and str(real) in err.message
        await session.command(protocol.TASK_CANCEL)
        assert f"path map: {seen} (editor) = {real} (server)" in log_file.read_text(encoding="utf-8")
    finally:
        await close(session)


async def test_a_long_phase_answers_at_once_and_announces_the_outcome(tmp_path: Path) -> None:
    """No request runs past the reply limit (eglot gives up after 10 s): the command answers
    with the task as it stands and the outcome follows as a message; a client without
    progress support reads each step in its log."""
    repo = build_repo(tmp_path / "project")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(
        'test_command = "python3 -c \\"import time; time.sleep(1.5)\\" && ' + TEST_COMMAND + '"\n'
    )
    env = {**os.environ, "AUTOCODE_LSP_REPLY_WITHIN_S": "0.3"}
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=env)
    try:
        await session.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            client_info=types.ClientInfo(name="Patient", version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
        ))
        session.choose = lambda params: "Let AutoCode decide"
        await session.command(protocol.TASK_START, {"brief": BRIEF})
        snap = await wait_for_need(session, repo, "approve_plan")
        replied = await session.command(protocol.TASK_APPROVE_PLAN)
        # Answered mid-phase (the tests alone take 1.5 s), with the task as it stood.
        assert replied["state"] in ("IMPLEMENTING", "VERIFYING") and replied["needs"]["kind"] is None
        await wait_until(
            lambda: any("is verified" in m.message for m in session.client.messages), timeout=60,
            what="the outcome announced",
        )
        done = await wait_for_need(session, repo, "approve_completion")
        assert done["id"] == snap["id"]
        steps = [m.message for m in session.client.log_messages if m.message.startswith("AutoCode: implementing")]
        assert len(steps) >= 2, steps
        await session.command(protocol.TASK_CANCEL)
    finally:
        await close(session)


async def test_a_late_reply_to_an_old_prompt_says_what_happened(tmp_path: Path) -> None:
    """Two editors on one repository: the question is answered in the second while the first
    still shows its prompt; the first person's late choice is not recorded, and they are told."""
    repo = build_repo(tmp_path / "project")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')
    release = asyncio.Event()
    prompts: list[types.ShowMessageRequestParams] = []
    first = make_test_lsp_client()

    @first.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def slow_person(ls: Any, params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        prompts.append(params)
        await release.wait()
        return types.MessageActionItem(title="Let AutoCode decide")

    await first.start_io(*server_command(tmp_path / "first.log"))
    a = Session(client=first, process=None, transport="stdio")
    b = await connect("stdio", log_file=tmp_path / "second.log")
    try:
        for s, name in ((a, "First"), (b, "Second")):
            await s.client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                client_info=types.ClientInfo(name=name, version="test"),
                workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
            ))
        started = await a.command(protocol.TASK_START, {"brief": BRIEF})
        await wait_until(lambda: prompts, what="the first editor's prompt")
        question = started["needs"]["questions"][0]
        await b.command(protocol.TASK_ANSWER, {
            "taskId": started["id"], "questionId": question["id"], "text": NAMING_ANSWER,
        })
        release.set()
        await wait_until(
            lambda: any("not recorded" in m.message for m in first.messages), what="the late reply's fate",
        )
        snap = await b.command(protocol.TASK_GET, {"taskId": started["id"]})
        ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
        assert [(x["kind"], x["text"]) for x in ledger["answers"]] == [("human", NAMING_ANSWER)]
        await b.command(protocol.TASK_CANCEL, {"taskId": started["id"]})
    finally:
        await close(b)
        await close(a)


RECONNECT_LOOPS = int(os.environ.get("AUTOCODE_RECONNECT_LOOPS", "1"))
"""How many times the reconnect test runs: once in the suite; `AUTOCODE_RECONNECT_LOOPS=50` runs
the loop that showed the start-up import race under load (docs/dev/architecture.md)."""


@pytest.mark.parametrize("loop", range(RECONNECT_LOOPS))
async def test_reconnecting_mid_question_and_mid_approval_asks_again(tmp_path: Path, loop: int) -> None:
    """An editor that went away and came back (a new server process over stdio) is asked the
    open question again, then told of the plan waiting for it; nothing was decided meanwhile."""
    repo = build_repo(tmp_path / "project")
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(f'test_command = "{TEST_COMMAND}"\n')

    async def editor(name: str) -> Session:
        s = await connect("stdio", log_file=tmp_path / f"{name}.log")
        s.choose = lambda params: None
        await s.client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            client_info=types.ClientInfo(name=name, version="test"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name="project")],
        ))
        return s

    first = await editor("First")
    try:
        started = await first.command(protocol.TASK_START, {"brief": BRIEF})
        await wait_until(lambda: first.message_requests, what="the question")
    finally:
        await close(first)  # the question was left open when the editor went away

    second = await editor("Second")
    try:
        second.choose = lambda params: "Let AutoCode decide"
        await wait_until(lambda: second.message_requests, what="the question asked again")
        assert "asks:" in second.message_requests[0].message
        snap = await wait_for_need(second, repo, "approve_plan")
        assert snap["id"] == started["id"]
    finally:
        await close(second)  # now the plan waits

    third = await editor("Third")
    try:
        await wait_until(
            lambda: any("plan revision" in m.message for m in third.client.messages),
            what="the waiting plan announced again",
        )
        assert (await task_state(third, repo))["needs"]["kind"] == "approve_plan"  # nothing decided
        await run_action(third, repo, "AutoCode: approve plan r")
        await wait_for_need(third, repo, "approve_completion")
        await third.command(protocol.TASK_CANCEL)
    finally:
        await close(third)
