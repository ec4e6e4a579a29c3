"""Server commands are a registry: a handler bound to its command where it is written.

A throwaway command (tests/throwaway/hello_command.py: one module whose
`@command(spec)` is its one registry entry) is loaded by the real server
process through `AUTOCODE_EXTENSIONS`, advertised in `initialize`, listed by
`autocode.protocol.info`, served with the protocol's argument checks, and its
engine errors keep their kinds. Without the extension the command is unknown.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autocode_lsp import protocol
from support import make_repo
from support.lsp import child_env, close, connect, initialize

TESTS = Path(__file__).resolve().parents[1]
HELLO = "autocode.throwaway.hello"


def _env(extensions: str | None) -> dict[str, str]:
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH", "")) if p)
    env.pop("AUTOCODE_EXTENSIONS", None)
    if extensions:
        env["AUTOCODE_EXTENSIONS"] = extensions
    return env


async def test_an_extension_command_is_served_by_the_real_server(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=_env("throwaway.hello_command"))
    try:
        result = await initialize(session, preset="vscode", folders=[repo])
        assert HELLO in result.capabilities.execute_command_provider.commands  # type: ignore[union-attr]
        info = await session.command(protocol.PROTOCOL_INFO)
        assert info["commands"][-1] == HELLO and protocol.TASK_START in info["commands"]
        answer = await session.command(HELLO, {"name": "Ada", "workspace": str(repo)})
        assert answer == {"greeting": "hello, Ada", "repositoryRoot": str(repo.resolve())}
        err = await session.command_error(HELLO, {"workspace": str(repo)})  # `name` is required
        assert err.code == -32602 and err.data["kind"] == "invalidArguments"
        err = await session.command_error(HELLO, {"name": "Ada", "workspace": str(repo / ".git")})
        assert err.code == -32803 and err.data["kind"] == "workspaceInvalid"
    finally:
        await close(session)


async def test_without_the_extension_the_command_is_unknown(tmp_path: Path) -> None:
    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=_env(None))
    try:
        result = await initialize(session, preset="vscode", folders=None)
        assert HELLO not in result.capabilities.execute_command_provider.commands  # type: ignore[union-attr]
        info = await session.command(protocol.PROTOCOL_INFO)
        assert info["commands"] == [c.name for c in protocol.COMMANDS]
        with pytest.raises(Exception):  # noqa: B017 - pygls answers an unknown command with an error
            await session.command(HELLO, {"name": "Ada"})
    finally:
        await close(session)


def test_a_name_is_bound_once_and_only_to_a_known_command() -> None:
    from autocode_lsp.commands import command, handler_for

    async def other(server: object, args: object) -> None:
        return None

    with pytest.raises(ValueError, match="not a protocol command"):
        command("autocode.noSuchCommand")(other)
    with pytest.raises(ValueError, match="already has a handler"):
        handler_for(protocol.MEMORY_SAVE)
        command(protocol.MEMORY_SAVE)(other)


def test_an_extension_command_takes_dataclasses_only() -> None:
    """A class of another kind (an attrs class, say) would go on the wire in snake_case, unchecked."""
    from autocode_lsp.commands import command, names

    class Plain:
        name: str

    async def other(server: object, args: object) -> None:
        return None

    for args, result in ((Plain, protocol.ForgetResult), (protocol.NoArgs, Plain)):
        spec = protocol.CommandSpec("autocode.throwaway.plain", args, result, "Refused.", "core")
        with pytest.raises(ValueError, match="must be a dataclass"):
            command(spec)(other)
    assert "autocode.throwaway.plain" not in names()
