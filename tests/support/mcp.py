"""The real `autocode-mcp` process, driven by the MCP SDK's own stdio client (or by the Inspector's CLI).

`mcp_server(...)` starts the server once (a module's tests share it) with this checkout's
code and the test run's isolated environment, and yields an `McpClient` whose calls are
plain functions: the SDK's asynchronous session runs in a portal thread, so module-scoped
fixtures need no event loop of their own.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import GREET_GOODBYE, GREET_SOURCES, git, make_repo

REPO = Path(__file__).resolve().parents[2]
CLIENT_NAME = "autocode-tests"
INSPECTOR_ENV = "AUTOCODE_TEST_MCP_INSPECTOR"
CLAUDE_ENV = "AUTOCODE_TEST_CLAUDE"
INSPECTOR = REPO / ".tools" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"
"""Where scripts/mcp-setup.sh installs @modelcontextprotocol/inspector (and Claude Code beside it)."""

PASSED_ENV = (
    "HOME", "PATH", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
)


def server_env(**extra: str) -> dict[str, str]:
    """The server's environment: the test run's isolated one, this checkout's code first."""
    env = {k: v for k, v in os.environ.items() if k in PASSED_ENV}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "engine"), str(REPO / "server")])
    env.update(extra)
    return env


def server_command(workspace: Path | None, *args: str) -> list[str]:
    cmd = [sys.executable, "-m", "autocode_mcp"]
    if workspace is not None:
        cmd += ["--workspace", str(workspace)]
    return [*cmd, *args]


@dataclass
class Reply:
    """One tool call's answer: whether it is a tool error, its structured content and its text."""

    is_error: bool
    data: dict[str, Any]
    text: str

    @property
    def error(self) -> dict[str, Any]:
        assert self.is_error, f"expected a tool error, got {self.text[:500]}"
        found: dict[str, Any] = self.data["error"]
        return found


class McpClient:
    def __init__(self, portal: Any, session: Any, log_file: Path) -> None:
        self._portal = portal
        self.session = session
        self.log_file = log_file

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Reply:
        result = self._portal.call(self.session.call_tool, tool, dict(arguments or {}))
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return Reply(bool(result.is_error), dict(result.structured_content or {}), text)

    def ok(self, tool: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        reply = self.call(tool, arguments)
        assert not reply.is_error, reply.text
        return reply.data

    def tools(self) -> list[Any]:
        return list(self._portal.call(self.session.list_tools).tools)

    def read_resource(self, uri: str) -> str:
        result = self._portal.call(self.session.read_resource, uri)
        return "\n".join(getattr(c, "text", "") for c in result.contents)

    def prompt(self, name: str, arguments: Mapping[str, str]) -> str:
        result = self._portal.call(self.session.get_prompt, name, dict(arguments))
        return "\n".join(getattr(m.content, "text", "") for m in result.messages)


@contextlib.contextmanager
def mcp_server(
    workspace: Path, log_file: Path, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[McpClient]:
    """The real server process on `workspace`, connected through `mcp.client.stdio`."""
    from anyio.from_thread import start_blocking_portal
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp import types

    command = server_command(workspace, "--log-file", str(log_file), *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(env or server_env()))
    info = types.Implementation(name=CLIENT_NAME, version="1")
    with contextlib.ExitStack() as stack:
        portal = stack.enter_context(start_blocking_portal())
        errlog = stack.enter_context(open(log_file.with_suffix(".stderr"), "w"))
        read, write = stack.enter_context(portal.wrap_async_context_manager(stdio_client(params, errlog=errlog)))
        session = stack.enter_context(portal.wrap_async_context_manager(ClientSession(read, write, client_info=info)))
        portal.call(session.initialize)
        yield McpClient(portal, session, log_file)


def build_task_repo(root: Path) -> Path:
    """A small unittest project with a committed patch the fixture implementer applies (the
    change and the test that proves it), for tasks the fixture provider runs."""
    make_repo(root, GREET_SOURCES)
    for rel, text in GREET_GOODBYE.items():
        (root / rel).write_text(text, encoding="utf-8")
    patch = git(root, "diff")
    git(root, "checkout", "--", *GREET_GOODBYE)
    (root / "change.patch").write_text(patch, encoding="utf-8")
    git(root, "add", "change.patch")
    git(root, "commit", "-q", "-m", "add the patch")
    return root


def inspector() -> Path | None:
    """The Inspector's launcher (its `--cli` mode is a real MCP client), or None when not installed."""
    named = os.environ.get(INSPECTOR_ENV)
    path = Path(named) if named else INSPECTOR
    return path if path.exists() else None


def claude() -> Path | None:
    """Claude Code's `claude` (scripts/mcp-setup.sh installs it), or None when not installed."""
    named = os.environ.get(CLAUDE_ENV)
    path = Path(named) if named else INSPECTOR.with_name("claude")
    return path if path.exists() else None


def inspect(
    workspace: Path, log_file: Path, method: str, *options: str, env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`mcp-inspector --cli <server> --method METHOD OPTIONS...` against the real server."""
    found = inspector()
    assert found is not None
    passed: list[str] = []
    for key, value in (env or server_env()).items():
        passed += ["-e", f"{key}={value}"]
    return subprocess.run(
        [str(found), "--cli", *passed, *server_command(workspace, "--log-file", str(log_file)),
         "--method", method, *options],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "MCP_CATALOG_PATH": str(log_file.with_suffix(".catalog.json"))},
    )


def sqlite_contents() -> list[str]:
    """Every memory's text in the default SQLite store the servers of this run share."""
    import sqlite3

    from autocode.memory import default_memory_path

    path = default_memory_path()
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [row[0] for row in db.execute("SELECT content FROM memories ORDER BY created_at")]


def tool_names(tools: Sequence[Any]) -> list[str]:
    return sorted(t.name for t in tools)
