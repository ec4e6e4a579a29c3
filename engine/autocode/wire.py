"""The wire form of the engine's typed results that are frozen dataclasses: camelCase keys.

The memory answers (`autocode.memory.model`) are dataclasses, not pydantic
models, because `autocode memory` without a workspace never loads pydantic
(about 0.15 to 0.25 s of CPU here, more than the whole command) and the store
records are dataclasses already. The language server's protocol module reuses
these classes as its shapes (their fields are the wire's, in snake_case), so
the server sends what the engine returns and `--json` prints the same `wire()`.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def camel(name: str) -> str:
    """`duplicate_of` -> `duplicateOf`; a trailing underscore (`global_`) is dropped."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


INTERNAL: dict[str, Any] = {"wire": False}
"""`field(metadata=INTERNAL)`: a field the engine keeps for its own callers and the wire leaves out."""


def wire_fields(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.metadata.get("wire", True)]


def dump(value: Any) -> Any:
    """JSON-ready data: dataclasses as camelCase objects of their wire fields, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): dump(getattr(value, f.name)) for f in wire_fields(type(value))}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return value


class Wire:
    """Mixed into a result dataclass: `wire()` is what the server sends and `--json` prints."""

    def wire(self) -> dict[str, Any]:
        data: dict[str, Any] = dump(self)
        return data
