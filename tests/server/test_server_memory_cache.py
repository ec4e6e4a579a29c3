"""The server keeps one memory service per store configuration for its whole life, and still sees
what other processes (the CLI) write to the store between its commands."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo, trust
from support.lsp import Session, child_env, close, connect, initialize

pytest.importorskip("autocode.memory", reason="the memory engine part is not merged yet")

OPENED_LINE = "memory: opened the"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    # A data folder of this module's own, so the default store holds only what these tests saved.
    values = child_env()
    values["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))
    return values


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cache")
    other_store = root / "elsewhere" / "team-memory.sqlite3"
    return {
        "a": make_repo(root / "alpha", {"README.md": "a\n"}, origin="https://example.invalid/t/alpha.git"),
        "b": make_repo(root / "beta", {"README.md": "b\n"}, origin="https://example.invalid/t/beta.git"),
        # Its own memory_path: a different store configuration, so a service of its own.
        "c": trust(make_repo(
            root / "gamma",
            {"README.md": "c\n", ".autocode/config.toml": f'memory_path = "{other_store.as_posix()}"\n'},
            origin="https://example.invalid/t/gamma.git",
        )),
        "c_store": other_store,
    }


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs") / "cache.log"


@pytest_asyncio.fixture(scope="module")
async def session(env: dict[str, str], repos: dict[str, Path], log_file: Path) -> AsyncIterator[Session]:
    s = await connect("stdio", log_file=log_file, env=env)
    await initialize(s, preset="neovim", folders=[repos["a"], repos["b"], repos["c"]])
    yield s
    await close(s)


async def stores(session: Session) -> dict[str, int]:
    info = await session.command(protocol.PROTOCOL_INFO, {})
    return dict(info["memoryStores"])


async def search(session: Session, folder: Path, query: str) -> list[str]:
    found = await session.command(protocol.MEMORY_SEARCH, {"query": query, "workspace": str(folder)})
    return [m["content"] for m in found["memories"]]


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", *args, "--json"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def opened_lines(log_file: Path) -> int:
    return log_file.read_text(encoding="utf-8").count(OPENED_LINE)


async def test_repeated_commands_reuse_one_service(session: Session, repos: dict[str, Path], log_file: Path) -> None:
    await search(session, repos["a"], "warm up")
    first = await stores(session)
    assert first["opened"] >= 1 and first["open"] >= 1
    saved = await session.command(
        protocol.MEMORY_SAVE,
        {"content": "Integration tests here need Docker running locally.", "workspace": str(repos["a"])},
    )
    assert saved["saved"] is True
    for _ in range(3):
        assert "Integration tests here need Docker running locally." in await search(
            session, repos["a"], "docker integration tests"
        )
    await session.command(protocol.MEMORY_LIST, {"workspace": str(repos["a"])})
    await session.command(protocol.MEMORY_RECALL, {"brief": "run the tests", "workspace": str(repos["a"])})
    # Another folder with the same settings shares the service: the key is the configuration.
    await search(session, repos["b"], "docker")
    assert await stores(session) == first
    assert opened_lines(log_file) == first["opened"]


async def test_a_cli_save_and_delete_are_seen_by_the_next_search(
    session: Session, repos: dict[str, Path], env: dict[str, str]
) -> None:
    fact = "The staging mail catcher keeps outgoing email for seven days."
    before = await stores(session)
    assert fact not in await search(session, repos["a"], "mail catcher email")  # the index is warm now
    saved = cli(env, "save", fact, "--workspace", str(repos["a"]))
    assert saved["saved"] is True
    assert fact in await search(session, repos["a"], "mail catcher email")
    cli(env, "delete", saved["id"], "--workspace", str(repos["a"]))
    assert fact not in await search(session, repos["a"], "mail catcher email")
    assert await stores(session) == before


async def test_a_different_store_configuration_gets_its_own_service(
    session: Session, repos: dict[str, Path]
) -> None:
    before = await stores(session)
    fact = "Release notes for this service are written in the changelog folder."
    saved = await session.command(protocol.MEMORY_SAVE, {"content": fact, "workspace": str(repos["c"])})
    assert saved["saved"] is True
    assert repos["c_store"].is_file()
    after = await stores(session)
    assert after["opened"] == before["opened"] + 1
    assert fact in await search(session, repos["c"], "release notes changelog")
    # The default store of the other folders never saw it.
    assert fact not in await search(session, repos["a"], "release notes changelog")
    assert await stores(session) == after


async def test_a_replaced_database_file_is_reopened(
    session: Session, repos: dict[str, Path], env: dict[str, str]
) -> None:
    await search(session, repos["c"], "anything")
    before = await stores(session)
    store: Path = repos["c_store"]
    for path in store.parent.glob(store.name + "*"):
        path.unlink()
    fact = "Database migrations in this project run in a separate deploy step."
    assert cli(env, "save", fact, "--workspace", str(repos["c"]))["saved"] is True
    assert fact in await search(session, repos["c"], "database migrations deploy")
    after = await stores(session)
    assert after["opened"] == before["opened"] + 1
    assert after["open"] == before["open"]


async def test_concurrent_commands_share_the_service(session: Session, repos: dict[str, Path]) -> None:
    before = await stores(session)
    facts = [
        "The billing queue worker retries failed charges three times.",
        "Email delivery runs through a queue worker with its own rate limit.",
        "Search indexing is done by a nightly queue worker, not on save.",
        "Thumbnails come from a queue worker that needs ImageMagick installed.",
        "Audit entries reach the warehouse through a queue worker every hour.",
    ]
    saves = [
        session.command(protocol.MEMORY_SAVE, {"content": fact, "workspace": str(repos["a"])}) for fact in facts
    ]
    searches = [search(session, repos[k], "queue worker") for k in ("a", "b") * 10]
    results = await asyncio.gather(*saves, *searches)
    assert [r["saved"] for r in results[: len(saves)]] == [True] * len(facts), results[: len(saves)]
    assert set(facts) <= set(await search(session, repos["a"], "queue worker"))
    assert await stores(session) == before


async def test_shutdown_closes_the_stores(env: dict[str, str], repos: dict[str, Path], tmp_path: Path) -> None:
    log_file = tmp_path / "shutdown.log"
    s = await connect("stdio", log_file=log_file, env=env)
    await initialize(s, preset="vscode", folders=[repos["b"]])
    assert await stores(s) == {"open": 0, "opened": 0}  # nothing opens before a memory command
    await search(s, repos["b"], "docker")
    assert await stores(s) == {"open": 1, "opened": 1}
    await close(s)
    text = log_file.read_text(encoding="utf-8")
    assert text.count(OPENED_LINE) == 1
    assert "memory: closed 1 store(s)" in text
