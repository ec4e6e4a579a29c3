"""Shared test helpers: real git repositories built in temp folders."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "AutoCode Tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "AutoCode Tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


VOCABULARY_INDEX: Path | None = None
"""The static embedding model's vocabulary index this run built once (tests/conftest.py)."""


def seed_user_cache(cache_home: Path) -> None:
    """Put this run's vocabulary index into a user cache folder (an XDG_CACHE_HOME) a test made,
    so the servers started there do not build it again: it is a cache, and building it is not
    what they test (tests/engine/test_static_lean.py does, in cache folders of its own)."""
    if VOCABULARY_INDEX is None:
        return
    target = cache_home / "autocode" / VOCABULARY_INDEX.name
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # A link: the index is only read (mapped read-only) or replaced whole by a rebuild.
        os.link(VOCABULARY_INDEX, target)
    except OSError:
        shutil.copyfile(VOCABULARY_INDEX, target)


def git(cwd: Path | str, *args: str, check: bool = True) -> str:
    """Run git in `cwd` for test set-up and return its stdout."""
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=env,
        check=check,
        capture_output=True,
    )
    return out.stdout.decode("utf-8", "surrogateescape")


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


GREET_SOURCES: dict[str, str] = {
    "greet.py": "def greet():\n    return 'hello'\n",
    "tests/__init__.py": "",
    "tests/test_greet.py": (
        "import unittest\n\nfrom greet import greet\n\n\n"
        "class GreetTest(unittest.TestCase):\n"
        "    def test_greet_says_hello(self):\n"
        "        self.assertIn('hello', greet())\n"
    ),
}
"""A small unittest project's files (greet() says hello), before any task changes it."""

GREET_GOODBYE: dict[str, str] = {
    "greet.py": "def greet():\n    return 'hello and goodbye'\n",
    "tests/test_greet.py": GREET_SOURCES["tests/test_greet.py"] + (
        "\n    def test_greet_says_goodbye_too(self):\n"
        "        self.assertIn('goodbye', greet())\n"
    ),
}
"""The same files after the change "greet() says goodbye too", with the test that proves it
(it fails on the files above): a patch of these is `verified`."""


def make_repo(
    root: Path,
    files: Mapping[str, str | bytes] | None = None,
    *,
    commit: bool = True,
    origin: str | None = None,
) -> Path:
    """Create a git repository at `root` with `files`, committed unless told otherwise."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    if files:
        write_files(root, files)
    if origin:
        git(root, "remote", "add", "origin", origin)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", "initial")
    return root


@contextmanager
def serve_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on a free 127.0.0.1 port for the block; yields the OpenAI-style base URL (…/v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def trust(repo: Path) -> Path:
    """Record the person's trust in the destination values `repo`'s files set now (as
    `autocode trust --yes` does), for tests whose repository names its own store or endpoint."""
    from autocode.settings import trust_repository

    trust_repository(repo)
    return repo
