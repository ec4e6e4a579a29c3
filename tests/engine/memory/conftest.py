"""Memory test fixtures: one PostgreSQL server for the session, stores of both kinds, real repositories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import MemoryService, open_memory
from support import git, make_repo
from support.pgserver import PgServer


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server = PgServer()
    server.start()
    try:
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


MemoryFactory = Callable[..., MemoryService]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_memory(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryFactory]:
    """Open services on one fresh store of the parametrised kind (keyword mode unless told otherwise)."""
    opened: list[MemoryService] = []
    location: dict[str, Any]
    if backend == "postgresql":
        location = {"database_url": request.getfixturevalue("pg_url")}
    else:
        location = {"memory_path": tmp_path / "memory.sqlite3"}

    def factory(**overrides: Any) -> MemoryService:
        settings: dict[str, Any] = {"embedding_provider": "none", **location, **overrides}
        service = open_memory(**settings)
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    """Two unrelated repositories A and B, a clone of A and a linked worktree of A (real git)."""
    a = make_repo(tmp_path / "repo-a", {"README.md": "alpha\n"}, origin="https://github.com/Example/Alpha.git")
    b = make_repo(tmp_path / "repo-b", {"README.md": "beta\n"})
    clone = tmp_path / "clone-a"
    git(tmp_path, "clone", "-q", str(a), str(clone))
    git(clone, "remote", "set-url", "origin", "git@github.com:example/alpha")
    worktree = tmp_path / "worktree-a"
    git(a, "worktree", "add", "-q", "--detach", str(worktree))
    return {"a": a, "b": b, "clone": clone, "worktree": worktree}
