"""The protocol's names are written down once: docs/dev/engine-api.md's field lists of the engine
results the wire reuses match those results' fields, and the editors take every command and method
name from the generated tables (scripts/gen_protocol_types.py), never from a copied string."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import model as memory_model
from autocode.wire import wire_fields
from autocode_lsp.protocol import schema, spec

ROOT = Path(__file__).resolve().parents[2]
ENGINE_API = ROOT / "docs" / "dev" / "engine-api.md"

# "`-> SearchResult` (`{query, method, memories: [...]}`" in the engine API doc.
_DOCUMENTED = re.compile(r"-> (\w+)`\s*\(`(\{[^`]*\})")


def _top_level(body: str) -> dict[str, str]:
    """The keys of a documented `{a, b: [{c, d}], e: "x"}` and what follows each key's colon."""
    inner = body.strip()[1:-1]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    out = {}
    for part in parts:
        key, _, rest = part.strip().partition(":")
        name = key.split()[0] if key.split() else key
        out[name] = rest.strip()
    return out


def _fields(cls: type[Any]) -> list[str]:
    fields = wire_fields(cls) if hasattr(cls, "__dataclass_fields__") else []
    if not fields and dataclasses.is_dataclass(cls):
        fields = list(dataclasses.fields(cls))
    return [f.name for f in fields]


def _item_class(cls: type[Any], name: str) -> type[Any] | None:
    tp = typing.get_type_hints(cls).get(name)
    args = typing.get_args(tp)
    if typing.get_origin(tp) is list and args and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
        return args[0]
    return None


def _check(cls: type[Any], body: str, where: str) -> None:
    documented = _top_level(body)
    assert sorted(documented) == sorted(_fields(cls)), f"{where}: docs/dev/engine-api.md lists {list(documented)}, " \
        f"{cls.__name__} has {_fields(cls)}"
    for key, rest in documented.items():
        nested = re.match(r"\[(\{.*\})\]", rest, re.S)
        item = _item_class(cls, key)
        if nested and item is not None:
            _check(item, nested.group(1), f"{where}.{key}")


def _documented_memory_results() -> list[tuple[str, str]]:
    found = [(m.group(1), m.group(2)) for m in _DOCUMENTED.finditer(ENGINE_API.read_text(encoding="utf-8"))]
    return [(name, body) for name, body in found if dataclasses.is_dataclass(getattr(memory_model, name, None))]


def test_the_engine_api_doc_documents_the_memory_results() -> None:
    names = [name for name, _ in _documented_memory_results()]
    assert {"SearchResult", "PromotionPlan", "PromotionResult"} <= set(names), names


@pytest.mark.parametrize(("name", "body"), _documented_memory_results(), ids=lambda v: v if "{" not in v else "")
def test_engine_api_doc_field_names_are_the_results_fields(name: str, body: str) -> None:
    _check(getattr(memory_model, name), body, name)


def test_the_doc_check_catches_the_old_hits_field() -> None:
    with pytest.raises(AssertionError, match="hits"):
        _check(memory_model.SearchResult, "{query, method, hits: [memory + score]}", "SearchResult")


_GENERATED = {ROOT / schema.TYPESCRIPT_PATH, ROOT / schema.LUA_PATH, ROOT / schema.LUA_NAMES_PATH}


def _wire_names() -> set[str]:
    return {c.name for c in spec.COMMANDS} | {m.name for m in spec.METHODS}


def _copied_names(folder: Path, suffixes: tuple[str, ...]) -> list[str]:
    literal = re.compile(r"""(['"])(autocode[./][A-Za-z./]+)\1""")
    comment = re.compile(r"^\s*(//|--|\*|/\*)")
    names = _wire_names()
    found = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in suffixes or path in _GENERATED or "node_modules" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if comment.match(line):
                continue
            found += [f"{path.relative_to(ROOT)}:{n}: {m.group(2)}" for m in literal.finditer(line)
                      if m.group(2) in names]
    return found


@pytest.mark.parametrize(("folder", "suffixes"), [
    ("editors/vscode/src", (".ts",)),
    ("editors/nvim/lua", (".lua",)),
    ("editors/nvim/plugin", (".lua", ".vim")),
])
def test_editors_use_the_generated_command_names(folder: str, suffixes: tuple[str, ...]) -> None:
    assert not _copied_names(ROOT / folder, suffixes), "use the generated COMMANDS/METHODS (protocol_names.lua)"


def test_the_name_scan_finds_a_copied_name(tmp_path: Path) -> None:
    src = ROOT / "editors" / "vscode" / "src"
    probe = src / "zz_probe_copied_name.ts"
    probe.write_text("export const x = 'autocode.task.start';\n", encoding="utf-8")
    try:
        assert _copied_names(src, (".ts",)) == ["editors/vscode/src/zz_probe_copied_name.ts:1: autocode.task.start"]
    finally:
        probe.unlink()


def test_generated_tables_hold_every_name() -> None:
    ts = (ROOT / schema.TYPESCRIPT_PATH).read_text(encoding="utf-8")
    lua = (ROOT / schema.LUA_NAMES_PATH).read_text(encoding="utf-8")
    for name in _wire_names():
        assert f'{schema.constant_key(name)}: "{name}",' in ts
        assert f"{schema.lua_key(name)} = '{name}'," in lua
