"""A lean server: the first memory commands import no numpy (a small bucket compares in plain Python),
a search or list on an empty store loads no embedding model (nothing to compare), and the server stays
within 120 MB of resident memory after its first memory commands.

Checked from outside the real server process (Linux `/proc/PID/maps` and `/proc/PID/status`), so
nothing in the server is there only for the test: the model's weights file and numpy's compiled
core show up in the map of a process that loaded them. Times are in tests/bench/bench_lean.py.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from autocode_lsp import protocol
from support import make_repo
from support.lsp import Session, child_env, close, connect, initialize

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps (Linux)")

RSS_GOAL_MB = 120.0
MODEL_FILE = "model.safetensors"
NUMPY_CORE = "_multiarray_umath"
HAS_MODEL = importlib.util.find_spec("static_model") is not None


def mapped(pid: int) -> set[str]:
    """Names of the files mapped into the process."""
    names = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            names.add(Path(parts[5]).name)
    return names


def loaded(pid: int, marker: str) -> bool:
    return any(marker in name for name in mapped(pid))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("lean") / "project", {"README.md": "lean\n"},
                     origin="https://example.invalid/t/lean.git")


async def fresh(tmp: Path, repo: Path) -> Session:
    """A new server on a new, empty memory store (its own data folder)."""
    env = child_env()
    env["XDG_DATA_HOME"] = str(tmp / "data")
    env["XDG_STATE_HOME"] = str(tmp / "state")
    session = await connect("stdio", log_file=tmp / "lsp.log", env=env)
    await initialize(session, preset="neovim", folders=[repo])
    return session


@pytest_asyncio.fixture
async def server(tmp_path: Path, repo: Path) -> AsyncIterator[tuple[Session, int]]:
    session = await fresh(tmp_path, repo)
    assert session.process is not None
    yield session, session.process.pid
    await close(session)


async def test_a_first_save_on_an_empty_store_imports_no_numpy_and_a_search_that_compares_loads_the_model(
    server: tuple[Session, int], repo: Path
) -> None:
    session, pid = server
    saved = await session.command(protocol.MEMORY_SAVE, {
        "content": "The test suite of this repository runs with unittest discovery from the tests folder.",
        "workspace": str(repo),
    })
    assert saved["saved"] is True
    # The save embeds its own memory with the lean model (an mmap of the weights, a few MB), so a
    # search never has to write vectors behind another writer; it has nothing to compare with.
    assert not loaded(pid, NUMPY_CORE), "numpy was imported for a save with nothing to compare"
    assert rss_mb(pid) <= RSS_GOAL_MB

    # Now there is something to compare: the same probe sees the model (the probe works); a bucket
    # this small compares in plain Python, so numpy still stays out.
    found = await session.command(protocol.MEMORY_SEARCH, {"query": "how are the tests run", "workspace": str(repo)})
    assert [m["content"][:14] for m in found["memories"]] == ["The test suite"]
    if HAS_MODEL:
        assert found["method"] == "hybrid"
        assert loaded(pid, MODEL_FILE) and not loaded(pid, NUMPY_CORE)
    assert rss_mb(pid) <= RSS_GOAL_MB


async def test_a_first_search_and_list_on_an_empty_store_load_no_model(
    server: tuple[Session, int], repo: Path
) -> None:
    session, pid = server
    found = await session.command(protocol.MEMORY_SEARCH, {"query": "how are the tests run", "workspace": str(repo)})
    listed = await session.command(protocol.MEMORY_LIST, {"workspace": str(repo)})
    assert found["memories"] == [] and listed["memories"] == []
    assert not loaded(pid, MODEL_FILE) and not loaded(pid, NUMPY_CORE)
    assert rss_mb(pid) <= RSS_GOAL_MB


def test_protocol_info_does_not_wait_for_the_warm_up_and_engine_commands_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client's first question at attach (protocol.info) answers beside the warm-up; the rest wait for it."""
    import threading

    from autocode_lsp import warmup

    waits: list[float | None] = []

    class Imports(threading.Event):
        """The warm-up's "imports done" event, noting every wait on it (a clock would lie under load)."""

        def wait(self, timeout: float | None = None) -> bool:
            waits.append(timeout)
            return False  # the warm-up is still importing when the wait ends

    started = threading.Event()
    started.set()  # a warm-up that is running and never finishes
    monkeypatch.setattr(warmup, "_started", started)
    monkeypatch.setattr(warmup, "_imported", Imports())
    monkeypatch.setattr(warmup, "SETTLE_TIMEOUT", 0.3)
    warmup.settled(protocol.PROTOCOL_INFO)
    assert waits == []
    warmup.settled(protocol.TASK_LIST)
    assert waits == [0.3]  # bounded by the settle timeout
    warmup.settled(protocol.TASK_LIST, bounded=False)
    assert waits == [0.3, None]


def test_shutdown_and_protocol_info_while_the_warm_up_is_importing_the_store_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm-up thread imports `autocode.memory.pool`; until it is done the module is in
    `sys.modules` half made. `shutdown` and `protocol.info` (which do not wait for the warm-up)
    look there: a half-made module means no store is open, not an AttributeError."""
    import importlib.machinery
    import sys
    import types

    from autocode_lsp.features import core
    from autocode_lsp.server import close_memory_services

    # What importlib leaves in sys.modules while a module's code still runs.
    half_made = types.ModuleType("autocode.memory.pool")
    half_made.__spec__ = importlib.machinery.ModuleSpec("autocode.memory.pool", None)
    half_made.__spec__._initializing = True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "autocode.memory.pool", half_made)
    close_memory_services()
    assert core._store_stats() == {"open": 0, "opened": 0}
