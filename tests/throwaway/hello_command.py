"""A throwaway server command for tests: `autocode.throwaway.hello`.

It is the whole of adding a command: this one module, whose `@command(spec)`
is one registry entry binding the spec (arguments, result, summary, errors) to
its handler. The server loads it when `AUTOCODE_EXTENSIONS` names it.
"""

from __future__ import annotations

from dataclasses import dataclass

from autocode_lsp import workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import engine_call
from autocode_lsp.protocol.spec import CommandSpec
from autocode_lsp.server import AutoCodeServer

NAME = "autocode.throwaway.hello"


@dataclass(kw_only=True, eq=False, repr=False)
class HelloArgs:
    name: str
    workspace: str | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class HelloResult:
    greeting: str
    repository_root: str | None


def _root(folder: str | None) -> str | None:
    from autocode.workspace import root

    return str(root(folder)) if folder else None


@command(CommandSpec(NAME, HelloArgs, HelloResult, "Greets, and names the workspace's repository.", "core",
                     ("workspaceInvalid",)))
async def hello(server: AutoCodeServer, args: HelloArgs) -> HelloResult:
    folder = workspaces.optional(server, args.workspace, command=NAME)
    root = await engine_call(_root, str(folder) if folder else None)
    return HelloResult(greeting=f"hello, {args.name}", repository_root=root)
