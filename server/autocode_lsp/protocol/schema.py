"""The protocol's shapes for the editors, generated from the models of `protocol.spec` (its
dataclasses, the engine's result dataclasses and the engine's pydantic results it reuses).

One JSON Schema (`docs/protocol.schema.json`) holds every shape a command takes
or returns, the custom methods' params and results, and the error kinds; the
extension's TypeScript types (`editors/vscode/src/generated/protocol.ts`) and the
Neovim plugin's LuaLS annotations (`editors/nvim/lua/autocode/protocol_types.lua`)
are generated from that schema, so the three never disagree.
`scripts/gen_protocol_types.py` writes them; tests fail when one is stale.

Wire names are camelCase (as `protocol.to_wire` sends them). A field with a
default may be left out of an argument object and is not listed as required;
results always carry every field.
"""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any, Literal

from autocode_lsp.protocol import spec
from autocode_lsp.protocol.names import PROTOCOL_VERSION

SCHEMA_PATH = "docs/protocol.schema.json"
TYPESCRIPT_PATH = "editors/vscode/src/generated/protocol.ts"
LUA_PATH = "editors/nvim/lua/autocode/protocol_types.lua"
LUA_NAMES_PATH = "editors/nvim/lua/autocode/protocol_names.lua"
PYTHON_NAMES_PATH = "server/autocode_lsp/protocol/command_names.py"
DOC_PATH = "docs/protocol.md"

def constant_key(name: str) -> str:
    """A command's or method's key in the generated name tables: `autocode.task.approvePlan` and
    `autocode/task/approvePlan` are `taskApprovePlan` (the editors' constants for the wire names)."""
    parts = re.split(r"[./]", name)
    if parts[0] == "autocode":
        parts = parts[1:]
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def lua_key(name: str) -> str:
    """`constant_key` in snake_case (the Neovim plugin's `protocol.commands.task_approve_plan`)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", constant_key(name)).lower()


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _wire(name: str) -> str:
    return spec.camel(name.rstrip("_"))


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None):
        return {"type": "null"}
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(a, defs) for a in args]}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0] if args else Any, defs)}
    if origin is dict:
        value = args[1] if len(args) == 2 else Any
        inner = _type_schema(value, defs)
        return {"type": "object", **({"additionalProperties": inner} if inner else {})}
    if spec.is_model(tp):
        _model(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _model(cls: type[Any], defs: dict[str, Any]) -> None:
    if cls.__name__ in defs:
        return
    defs[cls.__name__] = {}  # placeholder: a model may refer to itself
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in spec.model_fields(cls):
        prop = _union(f, defs) if f.union else _type_schema(f.tp, defs)
        if f.doc:
            prop = {**prop, "description": f.doc}
        if f.required:
            required.append(f.wire)
        else:
            prop = {**prop, "default": f.default}
        props[f.wire] = prop
    doc = " ".join((cls.__doc__ or "").split())
    body: dict[str, Any] = {"type": "object"}
    if doc and not doc.startswith(cls.__name__ + "("):
        body["description"] = doc
    body.update({"properties": props, "required": required, "additionalProperties": False})
    defs[cls.__name__] = body


def _union(f: spec.ModelField, defs: dict[str, Any]) -> dict[str, Any]:
    """A union told apart by `kind`: one named definition (`oneOf` with a discriminator)."""
    name = str(f.union)
    if name not in defs:
        variants = [_type_schema(v, defs) for v in typing.get_args(f.tp)]
        defs[name] = {"oneOf": variants, "discriminator": {"propertyName": "kind"}}
    return {"$ref": f"#/$defs/{name}"}


def _ref(cls: type[Any] | None, defs: dict[str, Any]) -> dict[str, Any]:
    return {"type": "null"} if cls is None else _type_schema(cls, defs)


def json_schema() -> dict[str, Any]:
    """The whole protocol as one JSON Schema document (draft 2020-12)."""
    defs: dict[str, Any] = {}
    commands = {
        c.name: {"arguments": _ref(c.args, defs), "result": _ref(c.result, defs)} for c in spec.COMMANDS
    }
    methods = {m.name: {"params": _ref(m.params, defs), "result": _ref(m.result, defs)} for m in spec.METHODS}
    kinds = [e.kind for e in (*spec.ERROR_KINDS, *spec.REMOTE_ERROR_KINDS)]
    defs["ErrorKind"] = {"description": "`data.kind` of a JSON-RPC error (docs/protocol.md says what each means).",
                         "enum": kinds}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "AutoCode LSP protocol",
        "description": "Generated from autocode_lsp.protocol by scripts/gen_protocol_types.py; do not edit.",
        "protocolVersion": PROTOCOL_VERSION,
        "commands": commands,
        "methods": methods,
        "$defs": dict(sorted(defs.items())),
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- TypeScript


def _ts(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[1]
    if "enum" in node:
        return " | ".join(json.dumps(v) for v in node["enum"])
    if "anyOf" in node or "oneOf" in node:
        return " | ".join(_ts(n) for n in node.get("anyOf") or node["oneOf"])
    kind = node.get("type")
    if kind == "array":
        inner = _ts(node["items"])
        return f"Array<{inner}>" if "|" in inner else f"{inner}[]"
    if kind == "object":
        return f"Record<string, {_ts(node['additionalProperties'])}>" if "additionalProperties" in node else \
            "Record<string, unknown>"
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
            "null": "null"}.get(str(kind), "unknown")


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}/** {text.replace('*/', '* /')} */"] if text else []


def typescript(schema: dict[str, Any] | None = None) -> str:
    schema = schema or json_schema()
    out = [
        "// Generated from docs/protocol.schema.json by scripts/gen_protocol_types.py; do not edit.",
        "// Wire names are camelCase; optional fields may be left out of argument objects.",
        "/* eslint-disable */",
        "",
        f"export const PROTOCOL_VERSION = {json.dumps(schema['protocolVersion'])};",
        "",
    ]
    for name, node in schema["$defs"].items():
        out.extend(_comment(node.get("description", ""), ""))
        if "enum" in node or "oneOf" in node:
            out.append(f"export type {name} = {_ts(node)};")
            out.append("")
            continue
        out.append(f"export interface {name} {{")
        required = set(node["required"])
        for prop, sub in node["properties"].items():
            out.extend(_comment(sub.get("description", ""), "  "))
            optional = "" if prop in required else "?"
            out.append(f"  {prop}{optional}: {_ts(sub)};")
        out.append("}")
        out.append("")
    for table, first in (("commands", "arguments"), ("methods", "params")):
        title = "Commands" if table == "commands" else "Methods"
        out.append(f"/** Every {table[:-1]} by name: its {first} and its result. */")
        out.append(f"export interface {title} {{")
        for name, pair in schema[table].items():
            out.append(f"  {json.dumps(name)}: {{ {first}: {_ts(pair[first])}; result: {_ts(pair['result'])} }};")
        out.append("}")
        out.append("")
    for table, title in (("commands", "COMMANDS"), ("methods", "METHODS")):
        out.append(f"/** Every {table[:-1]} name, under a constant (use these, never a copied string). */")
        out.append(f"export const {title} = {{")
        for name in schema[table]:
            out.append(f"  {constant_key(name)}: {json.dumps(name)},")
        out.append("} as const;")
        out.append("")
    out.extend([
        "export type CommandName = keyof Commands;",
        "export type CommandArguments<K extends CommandName> = Commands[K][\"arguments\"];",
        "export type CommandResult<K extends CommandName> = Commands[K][\"result\"];",
        "export type MethodName = keyof Methods;",
        "export type MethodParams<K extends MethodName> = Methods[K][\"params\"];",
        "export type MethodResult<K extends MethodName> = Methods[K][\"result\"];",
        "",
    ])
    return "\n".join(out)


# --------------------------------------------------------------------------- LuaLS


def _lua(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return "autocode." + str(node["$ref"]).rsplit("/", 1)[1]
    if "enum" in node:
        return "|".join("nil" if v is None else json.dumps(v).replace('"', "'") for v in node["enum"])
    if "anyOf" in node or "oneOf" in node:
        return "|".join(_lua(n) for n in node.get("anyOf") or node["oneOf"])
    kind = node.get("type")
    if kind == "array":
        inner = _lua(node["items"])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if kind == "object":
        return f"table<string, {_lua(node['additionalProperties'])}>" if "additionalProperties" in node else \
            "table<string, any>"
    return {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
            "null": "nil"}.get(str(kind), "any")


def lua(schema: dict[str, Any] | None = None) -> str:
    schema = schema or json_schema()
    out = [
        "-- Generated from docs/protocol.schema.json by scripts/gen_protocol_types.py; do not edit.",
        "-- LuaLS annotations of the AutoCode protocol's shapes (wire names, camelCase); no code runs here.",
        "---@meta",
        "",
    ]
    for name, node in schema["$defs"].items():
        if "description" in node:
            out.append(f"--- {node['description']}")
        if "enum" in node or "oneOf" in node:
            out.append(f"---@alias autocode.{name} {_lua(node)}")
            out.append("")
            continue
        out.append(f"---@class autocode.{name}")
        required = set(node["required"])
        for prop, sub in node["properties"].items():
            optional = "" if prop in required else "?"
            note = f" {sub['description']}" if "description" in sub else ""
            out.append(f"---@field {prop}{optional} {_lua(sub)}{note}")
        out.append("")
    out.append("return {}")
    return "\n".join(out) + "\n"


def lua_names(schema: dict[str, Any] | None = None) -> str:
    """The Neovim plugin's table of command and method names (`require('autocode.protocol_names')`)."""
    schema = schema or json_schema()
    out = [
        "-- Generated from docs/protocol.schema.json by scripts/gen_protocol_types.py; do not edit.",
        "-- Every command and method name of the AutoCode protocol (use these, never a copied string).",
        "local M = {}",
        "",
    ]
    for table in ("commands", "methods"):
        out.append(f"M.{table} = {{")
        for name in schema[table]:
            out.append(f"  {lua_key(name)} = {json.dumps(name).replace(chr(34), chr(39))},")
        out.append("}")
        out.append("")
    out.append("return M")
    return "\n".join(out) + "\n"


def python_constant(name: str) -> str:
    """A command's or method's constant in `protocol.names`: `autocode.task.approvePlan` and
    `autocode/task/approvePlan` are `TASK_APPROVE_PLAN`."""
    parts = re.split(r"[./]", name)
    if parts[0] == "autocode":
        parts = parts[1:]
    return "_".join(re.sub(r"(?<!^)(?=[A-Z])", "_", p).upper() for p in parts)


def python_names() -> str:
    """The server's name constants and each command's feature area, from the specs: a command is
    declared once, in `protocol/spec.py`, and its Python name comes from there."""
    out = [
        '"""Every command\'s and custom method\'s wire name as a constant, and each command\'s feature area.',
        "",
        "Generated from the specs in `protocol/spec.py` by `scripts/gen_protocol_types.py`: do not edit",
        "(a test fails when it is stale). `autocode_lsp.protocol.names` re-exports it.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    out += [f'{python_constant(c.name)} = "{c.name}"' for c in spec.COMMANDS]
    out.append("")
    out += [f'{python_constant(m.name)} = "{m.name}"' for m in spec.METHODS]
    out += ["", "COMMAND_FEATURES: dict[str, str] = {"]
    out += [f'    {python_constant(c.name)}: "{c.feature}",' for c in spec.COMMANDS]
    out += ["}", '"""Every command, in documentation order, and its feature area."""', ""]
    return "\n".join(out)


def generated() -> dict[str, str]:
    """Each generated file (path relative to the repository) and its text."""
    schema = json_schema()
    return {SCHEMA_PATH: schema_text(), TYPESCRIPT_PATH: typescript(schema), LUA_PATH: lua(schema),
            LUA_NAMES_PATH: lua_names(schema), PYTHON_NAMES_PATH: python_names(),
            DOC_PATH: spec.render_markdown()}
