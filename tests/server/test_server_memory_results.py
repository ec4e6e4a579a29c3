"""One shape for the memory answers: the engine's typed results are what the server sends and
what `autocode memory ... --json` prints, and the protocol's schema describes exactly them.

A real server (stdio) and the real CLI (a subprocess) share one SQLite store in a test's data
folder; each save, search and promotion plan is asked of both and the answers must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo
from support.lsp import Session, close, connect, initialize

ROOT = Path(__file__).resolve().parents[2]
FACT = "This repository's tests need TEST_DATABASE_URL set, or they fail with connection refused."
ADVICE = "Always run make lint before pushing; CI rejects unformatted code"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("results")
    repo = make_repo(base / "project", {"README.md": "x\n"}, origin="https://example.invalid/team/results.git")
    env = {**os.environ, "XDG_DATA_HOME": str(base / "data"), "XDG_CONFIG_HOME": str(base / "config")}
    env.pop("AUTOCODE_UNATTENDED", None)
    return repo, env


@pytest_asyncio.fixture(scope="module")
async def session(place: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    repo, env = place
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log", env=env)
    await initialize(s, preset="neovim", folders=[repo])
    yield s
    await close(s)


def cli(place: tuple[Path, dict[str, str]], *args: str, code: int = 0) -> dict[str, Any]:
    repo, env = place
    proc = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", *args, "--workspace", str(repo), "--json"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_the_protocol_reuses_the_engines_memory_results() -> None:
    from autocode.memory import model

    results = {c.name: c.result for c in protocol.COMMANDS}
    assert results[protocol.MEMORY_SAVE] is model.SaveResult
    assert results[protocol.MEMORY_SEARCH] is model.SearchResult
    assert results[protocol.MEMORY_PLAN_PROMOTION] is model.PromotionPlan
    assert results[protocol.MEMORY_LIST] is model.MemoryList
    assert results[protocol.MEMORY_DELETE] is model.MemoryDeleteResult
    assert results[protocol.MEMORY_RECALL] is model.RecallView
    assert results[protocol.MEMORY_APPLY_PROMOTION] is model.PromotionApplied
    assert protocol.MemoryView is model.MemoryView


def _schema_keys(name: str) -> set[str]:
    schema = json.loads((ROOT / "docs" / "protocol.schema.json").read_text(encoding="utf-8"))
    return set(schema["$defs"][name]["properties"])


async def test_the_server_and_the_cli_answer_with_the_same_typed_results(
    session: Session, place: tuple[Path, dict[str, str]]
) -> None:
    saved = cli(place, "save", FACT)
    assert saved["saved"] and saved["message"].startswith(f"saved {saved['id']}")
    assert set(saved) == _schema_keys("SaveResult")

    # The same text again: a duplicate, told alike by both (exit 5 in the CLI).
    by_server = await session.command(protocol.MEMORY_SAVE, {"content": FACT})
    by_cli = cli(place, "save", FACT, code=5)
    assert by_server == by_cli
    assert by_cli["duplicateOf"] == saved["id"] and by_cli["duplicateMethod"] == "exact"

    found_server = await session.command(protocol.MEMORY_SEARCH, {"query": "TEST_DATABASE_URL tests"})
    found_cli = cli(place, "search", "TEST_DATABASE_URL tests")
    assert found_server == found_cli
    assert set(found_cli) == _schema_keys("SearchResult")
    assert [m["id"] for m in found_cli["memories"]] == [saved["id"]]
    assert set(found_cli["memories"][0]) == _schema_keys("MemoryView")

    # Advice saved for the team is a promotion candidate; both plans agree.
    advice = cli(place, "save", ADVICE, "--category", "ci")
    plan_server = await session.command(protocol.MEMORY_PLAN_PROMOTION, {})
    plan_cli = cli(place, "plan-promotion")
    assert plan_server == plan_cli
    assert set(plan_cli) == _schema_keys("PromotionPlan")
    assert [c["memoryId"] for c in plan_cli["candidates"]] == [advice["id"]]
    for candidate in plan_cli["candidates"]:
        assert set(candidate) == _schema_keys("PromotionCandidate")

    # Listing and recall: the same answers from both, in the schema's shapes (camelCase only).
    listed_server = await session.command(protocol.MEMORY_LIST, {})
    listed_cli = cli(place, "list")
    assert listed_server == listed_cli and set(listed_cli) == _schema_keys("MemoryList")
    assert {m["id"] for m in listed_cli["memories"]} == {saved["id"], advice["id"]}
    assert all(set(m) == _schema_keys("MemoryView") for m in listed_cli["memories"])
    recalled_server = await session.command(protocol.MEMORY_RECALL, {"brief": "TEST_DATABASE_URL tests"})
    recalled_cli = cli(place, "recall", "TEST_DATABASE_URL tests")
    assert recalled_server == recalled_cli and set(recalled_cli) == _schema_keys("RecallView")
    assert saved["id"] in recalled_cli["text"]

    # Applying the promotion (a person's act in the CLI; the server's client is a person too).
    applied = cli(place, "apply-promotion", advice["id"])
    assert set(applied) == _schema_keys("PromotionApplied") and applied["removed"] == [advice["id"]]
    assert all(set(s) == _schema_keys("SkillView") for s in applied["skills"])
    owner = applied["skills"][0]["owner"]
    skills = cli(place, "skills", "--agent", owner)
    assert {s["name"] for s in skills["skills"]} >= {s["name"] for s in applied["skills"] if s["owner"] == owner}
    assert all("sourceMemoryId" in s and "source_memory_id" not in s for s in skills["skills"])

    # Delete: the removed memory, as the listing showed it.
    deleted = await session.command(protocol.MEMORY_DELETE, {"id": saved["id"]})
    assert set(deleted) == _schema_keys("MemoryDeleteResult")
    assert deleted["deleted"] == next(m for m in listed_cli["memories"] if m["id"] == saved["id"])
