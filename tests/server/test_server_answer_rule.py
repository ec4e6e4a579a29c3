"""The one answer rule over plain LSP and through askQuestion, with the real server process:
an accepted default or a delegated answer is recorded as such and never learned; a typed
answer is learned verbatim."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from test_server_tasks_flow import BRIEF, NAMING_ANSWER, TEST_COMMAND, build_repo

from autocode_lsp import protocol
from support.lsp import Session, close, connect, initialize, wait_until

pytest.importorskip("autocode.tasks", reason="the tasks engine part is not merged yet")

DEFAULT = "Name tests after the behaviour they check."


@pytest_asyncio.fixture(scope="module")
async def plain(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    # One session folder holds each test's repository (a workspace must lie inside one).
    base = tmp_path_factory.mktemp("repos")
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    await initialize(s, preset="neovim", folders=[base], opt_in=False)
    s.choose = lambda params: None  # prompts are left open: the test answers by command
    s.base = base  # type: ignore[attr-defined]
    yield s
    await close(s)


def _conventions(repo: Path) -> list[dict[str, Any]]:
    record = json.loads((repo / ".autocode" / "project.json").read_text(encoding="utf-8"))
    conventions: list[dict[str, Any]] = record["conventions"]
    return conventions


async def _run(session: Session, repo: Path, answer: dict[str, Any]) -> dict[str, Any]:
    ws = str(repo)
    first = await session.command(
        protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND, "workspace": ws}
    )
    task_id = first["id"]
    assert first["needs"]["questions"][0]["default"] == DEFAULT
    snap = await session.command(
        protocol.TASK_ANSWER, {"taskId": task_id, "questionId": "test-naming", "workspace": ws, **answer}
    )
    assert snap["needs"]["kind"] == "approve_plan", snap
    snap = await session.command(
        protocol.TASK_APPROVE_PLAN,
        {"taskId": task_id, "revision": snap["needs"]["planRevision"], "workspace": ws},
    )
    done = await session.command(protocol.TASK_APPROVE_COMPLETION, {"taskId": task_id, "workspace": ws})
    assert done["state"] == "COMPLETED", done
    return dict(done)


@pytest.mark.parametrize(
    ("answer", "how", "text", "learned"),
    [
        ({"text": DEFAULT}, "acceptedDefault", DEFAULT, False),
        ({"text": "", "how": "acceptedDefault"}, "acceptedDefault", DEFAULT, False),
        ({"how": "delegated"}, "delegated", DEFAULT, False),
        ({"text": NAMING_ANSWER}, "typed", NAMING_ANSWER, True),
        ({"text": DEFAULT, "how": "chosen"}, "chosen", DEFAULT, True),
    ],
    ids=["default-text", "accepted-default", "delegated", "typed", "chosen"],
)
async def test_plain_lsp_answers_follow_the_one_rule(
    plain: Session, tmp_path: Path, answer: dict[str, Any], how: str, text: str, learned: bool
) -> None:
    repo = build_repo(plain.base / tmp_path.name / "project")  # type: ignore[attr-defined]
    done = await _run(plain, repo, answer)
    [recorded] = done["answers"]
    assert (recorded["how"], recorded["text"], recorded["channel"]) == (how, text, "lsp:Neovim")
    ledger = json.loads((Path(done["runDir"]) / "ledger.json").read_text(encoding="utf-8"))
    assert ledger["answers"][0]["how"] == how
    expected = [text] if learned else []
    assert [c["answer"] for c in _conventions(repo)] == expected


async def test_a_bad_how_is_refused_and_records_nothing(plain: Session, tmp_path: Path) -> None:
    repo = build_repo(plain.base / tmp_path.name / "project")  # type: ignore[attr-defined]
    ws = str(repo)
    first = await plain.command(
        protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND, "workspace": ws}
    )
    bad = await plain.command_error(protocol.TASK_ANSWER, {
        "taskId": first["id"], "questionId": "test-naming", "text": "x", "how": "guessed", "workspace": ws,
    })
    assert bad.data["kind"] == "invalidArguments"
    differs = await plain.command_error(protocol.TASK_ANSWER, {
        "taskId": first["id"], "questionId": "test-naming", "text": "x", "how": "acceptedDefault",
        "workspace": ws,
    })
    assert differs.data["kind"] == "invalidArguments" and "differs" in differs.message
    snap = await plain.command(protocol.TASK_GET, {"taskId": first["id"], "workspace": ws})
    assert snap["answers"] == [] and snap["revision"] == first["revision"]
    ok = await plain.command(protocol.TASK_ANSWER, {
        "taskId": first["id"], "questionId": "test-naming", "text": NAMING_ANSWER, "workspace": ws,
    })
    late = await plain.command_error(protocol.TASK_ANSWER, {
        "taskId": first["id"], "questionId": "test-naming", "text": "again", "workspace": ws,
    })
    assert late.data["kind"] == "alreadyDecided" and "already answered at" in late.message
    assert late.data["decidedAt"] == ok["answers"][0]["time"]
    await plain.command(protocol.TASK_CANCEL, {"taskId": first["id"], "workspace": ws})


async def test_ask_question_replies_carry_how(tmp_path: Path) -> None:
    """An opted-in client's "Let AutoCode decide" is delegated; a plain client's extra button too."""
    repo = build_repo(tmp_path / "project")
    session = await connect("stdio", log_file=tmp_path / "lsp.log")
    await initialize(session, preset="vscode", folders=[repo], opt_in=True)
    try:
        session.answer_question = lambda q: {"answer": None, "how": "delegated"}
        snap = await session.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(
            lambda: any(c["task"]["needs"]["kind"] == "approve_plan" for c in session.did_change),
            timeout=60, what="the delegated answer to move the task on",
        )
        got = await session.command(protocol.TASK_GET, {"taskId": snap["id"]})
        assert [(a["how"], a["text"]) for a in got["answers"]] == [("delegated", DEFAULT)]
        await session.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        await close(session)

    plain_repo = build_repo(tmp_path / "plain")
    other = await connect("stdio", log_file=tmp_path / "plain.log")
    await initialize(other, preset="neovim", folders=[plain_repo], opt_in=False)
    try:
        other.choose = lambda params: params.actions[-1].title if params.actions else None
        snap = await other.command(protocol.TASK_START, {"brief": BRIEF, "testCommand": TEST_COMMAND})
        await wait_until(lambda: other.message_requests, timeout=30, what="the question prompt")
        titles = [a.title for a in other.message_requests[0].actions or []]
        assert titles == ["Answer in a file…", "Accept the proposed default (not remembered)",
                          "Let AutoCode decide"]

        await wait_until(lambda: any("ready for review" in m.message for m in other.client.messages)
                         or bool(other.client.shown_documents), timeout=60, what="the plan after the answer")
        got = await other.command(protocol.TASK_GET, {"taskId": snap["id"]})
        assert [a["how"] for a in got["answers"]] == ["delegated"]
        await other.command(protocol.TASK_CANCEL, {"taskId": snap["id"]})
    finally:
        await close(other)
