"""Test-run isolation: no test reads or writes this machine's git config or user data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import support
from support import GIT_ENV


@pytest.fixture(scope="session")
def _vocabulary_index(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The static embedding model's vocabulary index, built once per run (per worker).

    It is a cache keyed by the installed tokenizer, kept in the user's cache folder; with a home
    per test file every file's servers and CLI runs would build it again (about 1.3 s of CPU in
    a child process each time). Tests of the build itself use cache folders of their own."""
    try:
        from autocode.memory import static_lean
        from autocode.memory.embeddings import static_model_installed

        if not static_model_installed():
            return None
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("vocabulary-cache")))
            support.VOCABULARY_INDEX = static_lean.ensure_index(static_lean.model_dir() / "tokenizer.json")
    except Exception:  # no model, or no index: each server says so, as it would for a person
        support.VOCABULARY_INDEX = None
    return support.VOCABULARY_INDEX


@pytest.fixture(scope="module", autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, _vocabulary_index: Path | None) -> Iterator[None]:
    """A home of its own for each test file: what one file leaves there (a global memory, a
    trust record) is never met by another file that happens to run later in the same worker."""
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = AutoCode Tests\n\temail = tests@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n",
        encoding="utf-8",
    )
    saved = dict(os.environ)
    os.environ.update(GIT_ENV)
    os.environ["HOME"] = str(home)
    os.environ["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    os.environ["XDG_DATA_HOME"] = str(home / ".local" / "share")
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    os.environ["XDG_STATE_HOME"] = str(home / ".local" / "state")
    os.environ["XDG_CACHE_HOME"] = str(home / ".cache")
    support.seed_user_cache(home / ".cache")
    os.environ.pop("AUTOCODE_UNATTENDED", None)
    # The suites tasks run here are tiny; this venv's pytest plugins (pytest-lsp, hypothesis...)
    # would cost each of them seconds. The person's own config lets the variable into the sandbox.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    user_config = home / ".config" / "autocode" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text('sandbox_env = ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]\n', encoding="utf-8")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(autouse=True)
def _memory_stores_closed_after_each_test() -> Iterator[None]:
    """Each test starts without open memory stores, as each CLI run does.

    The engine's store pool keeps a store open for the process; a test that opens the same
    SQLite file again (`open_memory`) beside it, or a CLI subprocess on it, must not meet a
    connection an earlier test left open.
    """
    yield
    import sys

    pool = sys.modules.get("autocode.memory.pool")
    if pool is not None:
        pool.close_all()
