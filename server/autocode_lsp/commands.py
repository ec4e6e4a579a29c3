"""Server commands: a handler bound to its command in one place, the `@command` decorator.

A protocol command's shapes and documentation are its `CommandSpec` in
`protocol.spec` (the schema, the editors' types and docs/protocol.md are made
from those); its name and feature area are in `protocol.names`, which is all
`initialize` loads. Its handler is bound where it is written:

    @command(protocol.MEMORY_SAVE)
    async def save(server, args: protocol.MemorySaveArgs) -> protocol.MemorySaveResult: ...

The handler's module (`features/<area>.py`) is imported when one of its
commands is first called. An extension module (named by `AUTOCODE_EXTENSIONS`,
loaded before the server registers its commands) adds a whole command the same
way, passing its own `CommandSpec` instead of a name: the spec and the handler
are then one registry entry, served, listed by `autocode.protocol.info` and
checked like any other (tests/throwaway/hello_command.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from autocode_lsp import protocol

if TYPE_CHECKING:
    from autocode_lsp.protocol.spec import CommandSpec

Handler = Callable[[Any, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)

FEATURE_MODULES = {
    "core": "core", "doctor": "project", "forget": "project", "trust": "project",
    "prep": "prep", "tasks": "tasks", "memory": "memory", "actions": "actions",
    "verify": "verify", "session": "session",
}
"""Which `features/` module handles each protocol feature area."""

_HANDLERS: dict[str, Handler] = {}
_EXTENSION_SPECS: dict[str, CommandSpec] = {}


def command(name_or_spec: str | CommandSpec) -> Callable[[H], H]:
    """Bind the decorated handler to a protocol command (by name), or register a new command
    with its spec (an extension's). A name bound twice is a programming error."""

    def bind(handler: H) -> H:
        if isinstance(name_or_spec, str):
            name = name_or_spec
            if name not in protocol.COMMAND_FEATURES:
                raise ValueError(f"{name} is not a protocol command; pass a CommandSpec to add one")
        else:
            name = name_or_spec.name
            if name in protocol.COMMAND_FEATURES:
                raise ValueError(f"{name} is a protocol command already")
            # Any other class would reach the wire without the camelCase names and checks.
            if not protocol.is_shape(name_or_spec.args) or not protocol.is_model(name_or_spec.result):
                raise ValueError(f"{name}: the arguments must be a dataclass and the result a dataclass "
                                 "or an engine pydantic model (see protocol/spec.py)")
            _EXTENSION_SPECS[name] = name_or_spec
        if _HANDLERS.get(name, handler) is not handler:
            raise ValueError(f"{name} already has a handler ({_HANDLERS[name].__qualname__})")
        _HANDLERS[name] = handler
        return handler

    return bind


def names() -> list[str]:
    """Every command the server serves: the protocol's, in documentation order, then the extensions'."""
    return [*protocol.COMMAND_FEATURES, *_EXTENSION_SPECS]


def spec_for(name: str) -> CommandSpec:
    spec = _EXTENSION_SPECS.get(name)
    return spec if spec is not None else protocol.COMMANDS_BY_NAME[name]


def handler_for(name: str) -> Handler:
    """The handler of a command; its feature module is imported on first use, not at start-up."""
    handler = _HANDLERS.get(name)
    if handler is None:
        importlib.import_module(f"autocode_lsp.features.{FEATURE_MODULES[protocol.COMMAND_FEATURES[name]]}")
        handler = _HANDLERS[name]  # its module binds it with @command when imported
    return handler
