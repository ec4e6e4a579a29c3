"""Checks that a typed result stays typed: the engine's keys are declared, the wire is camelCase."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

import pydantic

CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def models_in(tp: Any) -> list[type[pydantic.BaseModel]]:
    """The pydantic models an annotation holds (through `X | None`, lists and dict values)."""
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return [tp]
    if typing.get_origin(tp) in (typing.Union, types.UnionType, list, dict):
        return [m for arg in typing.get_args(tp) for m in models_in(arg)]
    return []


def is_mapping(tp: Any) -> bool:
    return typing.get_origin(tp) is dict or any(is_mapping(arg) for arg in typing.get_args(tp))


def undeclared(model: type[pydantic.BaseModel], data: dict[str, Any], where: str) -> list[str]:
    """Keys of `data` (as the engine writes it, snake_case) that `model` does not declare, at any depth."""
    model.model_rebuild()
    out: list[str] = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            out.append(f"{where}.{key}")
            continue
        inner = models_in(field.annotation)
        if not inner or value is None:
            continue
        if is_mapping(field.annotation):
            for name, item in value.items():
                out += undeclared(inner[0], item, f"{where}.{key}[{name}]")
        elif isinstance(value, dict):
            out += undeclared(inner[0], value, f"{where}.{key}")
    return out


def keys_not_camel(data: Any, where: str = "") -> list[str]:
    """Every object key of a wire dump that is not camelCase (file paths as keys of `choices` aside)."""
    if isinstance(data, list):
        return [k for i, item in enumerate(data) for k in keys_not_camel(item, f"{where}[{i}]")]
    if not isinstance(data, dict):
        return []
    out = []
    for key, value in data.items():
        if not CAMEL.match(key):
            out.append(f"{where}.{key}")
        if key != "choices":
            out += keys_not_camel(value, f"{where}.{key}")
    return out
