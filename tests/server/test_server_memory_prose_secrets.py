"""`autocode.memory.save` over the real server refuses a secret stated in a sentence with the
rule's reason, stores nothing, and still saves a sentence about secrets that holds no value (issue 31)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo
from support.lsp import Session, child_env, close, connect, initialize
from support.scrub import load_corpus

PROSE = [item for item in load_corpus()["credentials"] if item["kind"] == "secret_in_prose"]


@pytest_asyncio.fixture(scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    repo = make_repo(tmp_path_factory.mktemp("prose") / "project", {"README.md": "x\n"},
                     origin="https://example.invalid/team/prose.git")
    env = child_env()
    env["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))  # a store holding only this module's saves
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "prose.log", env=env)
    await initialize(s, preset="neovim", folders=[repo])
    yield s
    await close(s)


async def _contents(session: Session) -> list[str]:
    listed = await session.command(protocol.MEMORY_LIST, {})
    return [m["content"] for m in listed["memories"]]


@pytest.mark.parametrize("item", PROSE[:5], ids=[i["note"] for i in PROSE[:5]])
async def test_a_secret_in_a_sentence_is_refused_with_the_reason(session: Session, item: dict[str, str]) -> None:
    before = await _contents(session)
    err = await session.command_error(protocol.MEMORY_SAVE, {"content": item["text"]})
    assert err.code == -32803 and err.data["kind"] == "memoryRefused" and err.data["reason"] == "credential"
    assert "states a secret's value in words" in err.message
    assert item["secret"] not in err.message + str(err.data)
    assert await _contents(session) == before


async def test_a_sentence_about_a_secret_without_its_value_is_saved(session: Session) -> None:
    saved = await session.command(protocol.MEMORY_SAVE, {"content": "Rotate the API key of the mail relay monthly."})
    assert saved["saved"] is True
    assert "Rotate the API key of the mail relay monthly." in await _contents(session)
