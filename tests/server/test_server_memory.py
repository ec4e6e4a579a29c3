"""Memory over LSP: save (and every refusal), duplicates, skills, search, list, delete, recall,
and what a session without a workspace folder can reach."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo
from support.lsp import Session, close, connect, initialize

pytest.importorskip("autocode.memory", reason="the memory engine part is not merged yet")

DURABLE = "This repository's tests need TEST_DATABASE_URL set, or they fail with connection refused."
GLOBAL_FACT = "Release builds of this organisation are signed on a dedicated offline machine."


def credential_sentence() -> str:
    # Assembled at run time so no credential-shaped literal sits in the repository.
    return "The deploy token is " + "ghp" + "_" + "Zq3Rt7Kp9Lm2Xv5Nb8Wc4Yd6Hf1Gj0Sa3TeU8vQ"


REFUSALS = {
    "task_key": "Fixing PAY-128 needs the billing flag turned on.",
    "pr_or_issue": "PR #412 changed how migrations run.",
    "commit_sha": "The flaky test came from commit 3f9a2c7e1b4d.",
    "column_move": "Moved the card from code_review -> ready_for_qa after the fix.",
    "this_task": "This task needs the staging database.",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(
        tmp_path_factory.mktemp("memory") / "project", {"README.md": "x\n"},
        origin="https://example.invalid/team/project.git",
    )


@pytest_asyncio.fixture(scope="module")
async def with_repo(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "a.log")
    await initialize(s, preset="neovim", folders=[repo])
    yield s
    await close(s)


@pytest_asyncio.fixture(scope="module")
async def no_folder(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "b.log")
    await initialize(s, preset="vscode", folders=None)
    yield s
    await close(s)


async def _all_contents(session: Session) -> list[str]:
    listed = await session.command(protocol.MEMORY_LIST, {})
    return [m["content"] for m in listed["memories"]]


async def test_save_search_duplicate_and_delete(with_repo: Session, repo: Path) -> None:
    saved = await with_repo.command(protocol.MEMORY_SAVE, {"content": DURABLE, "scope": "project"})
    assert saved["saved"] is True and saved["scope"] == "project"
    # The repository is named by its portable key, never by this machine's path.
    assert saved["repository"] and str(repo) not in saved["repository"]
    again = await with_repo.command(protocol.MEMORY_SAVE, {"content": DURABLE})
    assert again["saved"] is False and again["duplicateOf"] == saved["id"] and again["similarTo"] is None
    # Another variable is another fact: saved beside it, and the reply names the close one.
    other = await with_repo.command(protocol.MEMORY_SAVE, {"content": DURABLE.replace("TEST_DATABASE_URL", "TEST_CACHE_URL")})
    assert other["saved"] is True and other["similarTo"] == saved["id"]
    assert saved["id"] in other["message"]
    await with_repo.command(protocol.MEMORY_DELETE, {"id": other["id"]})

    found = await with_repo.command(protocol.MEMORY_SEARCH, {"query": "TEST_DATABASE_URL tests"})
    assert [m["id"] for m in found["memories"]][:1] == [saved["id"]]
    assert found["memories"][0]["score"] is not None

    deleted = await with_repo.command(protocol.MEMORY_DELETE, {"id": saved["id"]})
    assert deleted["deleted"]["id"] == saved["id"]
    assert DURABLE not in await _all_contents(with_repo)
    gone = await with_repo.command_error(protocol.MEMORY_DELETE, {"id": saved["id"]})
    assert gone.code == -32803 and gone.data["kind"] == "memoryNotFound"


@pytest.mark.parametrize("reason", sorted([*REFUSALS, "credential"]))
async def test_each_refusal_is_an_error_and_writes_nothing(with_repo: Session, reason: str) -> None:
    content = credential_sentence() if reason == "credential" else REFUSALS[reason]
    before = await _all_contents(with_repo)
    err = await with_repo.command_error(protocol.MEMORY_SAVE, {"content": content})
    assert err.code == -32803
    assert err.data["kind"] == "memoryRefused"
    assert err.data["reason"] == reason
    assert err.data["belongs"]
    assert "not saved" in err.message
    assert await _all_contents(with_repo) == before


async def test_reusable_know_how_becomes_a_skill(with_repo: Session) -> None:
    procedure = (
        "To cut a release of this project: 1. bump the version in pyproject.toml "
        "2. tag the commit with the version 3. push the tag and wait for the release job"
    )
    result = await with_repo.command(protocol.MEMORY_SAVE, {"content": procedure})
    assert result["saved"] is False and result["skill"]
    assert procedure not in await _all_contents(with_repo)


async def test_session_without_folder_reaches_global_memories_only(
    with_repo: Session, no_folder: Session
) -> None:
    project = await with_repo.command(
        protocol.MEMORY_SAVE, {"content": "Integration tests here run against a local Redis.", "scope": "project"}
    )
    assert project["saved"]
    err = await no_folder.command_error(protocol.MEMORY_SAVE, {"content": GLOBAL_FACT, "scope": "project"})
    assert err.code == -32803 and err.data["kind"] == "noRepository"
    saved = await no_folder.command(protocol.MEMORY_SAVE, {"content": GLOBAL_FACT})
    assert saved["saved"] and saved["scope"] == "global" and saved["repository"] is None

    seen = await _all_contents(no_folder)
    assert GLOBAL_FACT in seen
    assert "Integration tests here run against a local Redis." not in seen
    hidden = await no_folder.command_error(protocol.MEMORY_DELETE, {"id": project["id"]})
    assert hidden.data["kind"] == "memoryNotFound"
    # The repository session sees both.
    both = await _all_contents(with_repo)
    assert GLOBAL_FACT in both and "Integration tests here run against a local Redis." in both

    recall = await no_folder.command(protocol.MEMORY_RECALL, {"brief": "set up CI"})
    assert recall["project"] == [] and recall["repository"] is None
    assert "## Global memories" in recall["text"]


async def test_bad_memory_arguments(with_repo: Session) -> None:
    for args in ({"content": ""}, {"content": "x", "scope": "team"}, {"query": "x", "limit": 0}):
        command = protocol.MEMORY_SEARCH if "query" in args else protocol.MEMORY_SAVE
        err = await with_repo.command_error(command, args)
        assert err.code == -32602, args


async def test_recall_in_a_repository_session_has_both_sections(with_repo: Session) -> None:
    fact = "Database migrations in this repository are applied with alembic upgrade head."
    saved = await with_repo.command(protocol.MEMORY_SAVE, {"content": fact, "scope": "project"})
    assert saved["saved"]
    receipt = await with_repo.command(protocol.MEMORY_RECALL, {"brief": "add a database migration"})
    assert receipt["repository"] == saved["repository"]
    assert fact in [m["content"] for m in receipt["project"]]
    assert "## Global memories" in receipt["text"] and fact in receipt["text"]
    assert receipt["method"] and receipt["reason"]


async def test_promotion_plan_writes_nothing_and_apply_turns_know_how_into_skills(
    with_repo: Session,
) -> None:
    advice = "Always run make lint before pushing; CI rejects unformatted code"
    fact = "The staging database is reset every night at 02:00 UTC"
    know_how = await with_repo.command(protocol.MEMORY_SAVE, {"content": advice, "category": "ci"})
    plain_fact = await with_repo.command(protocol.MEMORY_SAVE, {"content": fact})
    assert know_how["saved"] and plain_fact["saved"]

    before = await _all_contents(with_repo)
    plan = await with_repo.command(protocol.MEMORY_PLAN_PROMOTION, {})
    assert await _all_contents(with_repo) == before
    by_id = {c["memoryId"]: c for c in plan["candidates"]}
    assert know_how["id"] in by_id and plain_fact["id"] not in by_id
    candidate = by_id[know_how["id"]]
    assert candidate["category"] == "ci" and "implementer" in candidate["agents"]
    assert plan["scanned"] >= 2

    # A non-candidate among the ids: a bad argument, and nothing is applied.
    err = await with_repo.command_error(
        protocol.MEMORY_APPLY_PROMOTION, {"ids": [know_how["id"], plain_fact["id"]]}
    )
    assert err.code == -32602 and "nothing was applied" in err.message
    assert await _all_contents(with_repo) == before

    applied = await with_repo.command(protocol.MEMORY_APPLY_PROMOTION, {"ids": [know_how["id"]]})
    assert applied["removed"] == [know_how["id"]]
    assert {s["name"] for s in applied["skills"]} == {candidate["name"]}
    assert {s["owner"] for s in applied["skills"]} == set(candidate["agents"])
    after = await _all_contents(with_repo)
    assert advice not in after and fact in after
    again = await with_repo.command(protocol.MEMORY_PLAN_PROMOTION, {})
    assert know_how["id"] not in {c["memoryId"] for c in again["candidates"]}
