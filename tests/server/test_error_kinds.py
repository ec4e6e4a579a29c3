"""Every error kind is declared once, in the protocol's tables, and the tables hold nothing else.

The kinds the engine and the server can raise are read from the code with `ast`:

- `kind = "..."` in the body of an error class (a subclass, however indirect, of
  `AutoCodeError`, of an exception class, or of another error class), but for
  the bases in `ABSTRACT`, which are always raised with a kind of their own;
- `kind="..."` passed to such a class (`SetupError(..., kind="copyFailed")`);
- the first argument of `domain_error("...")`, of a manifest `Problem("...")`
  (it becomes the `SetupError`'s kind) and of the server's `_refuse(id, code, "...")`;
- `data={"kind": "...", ...}` given to any call (a hand-built JSON-RPC error);
- the file-system fault kinds of `autocode.errors._FAULTS`.

Both directions must hold: every raised kind is in `ERROR_KINDS` or
`REMOTE_ERROR_KINDS` (so docs/protocol.md, rendered from them, explains it),
and every kind in those tables is raised somewhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

from autocode_lsp import protocol

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "engine" / "autocode", ROOT / "server" / "autocode_lsp"]
KIND_ARG_CALLS = {"domain_error": 0, "Problem": 0, "_refuse": 2}
ABSTRACT = {"AutoCodeError", "MemoryStoreError"}
"""Base classes raised only with a `kind=` of their own: their default kind is never sent."""


def _trees() -> list[ast.Module]:
    trees = []
    for base in SOURCES:
        for path in sorted(base.rglob("*.py")):
            if path.parts[-2:] == ("protocol", "spec.py"):
                continue  # the tables themselves
            trees.append(ast.parse(path.read_text(encoding="utf-8")))
    return trees


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _error_classes(trees: list[ast.Module]) -> dict[str, ast.ClassDef]:
    classes = [n for tree in trees for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    known = {"AutoCodeError", "Exception", "OSError", "ValueError", "RuntimeError"}
    found: dict[str, ast.ClassDef] = {}
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name not in found and any(_name(b) in known | set(found) for b in cls.bases):
                found[cls.name] = cls
                changed = True
    return found


def _text(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def raised_kinds() -> set[str]:
    trees = _trees()
    errors = _error_classes(trees)
    kinds: set[str] = set()
    for cls in errors.values():
        if cls.name in ABSTRACT:
            continue
        for stmt in cls.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(_name(t) == "kind" for t in targets) and (k := _text(stmt.value)):
                    kinds.add(k)
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            callee = _name(node.func)
            for kw in node.keywords:
                if kw.arg == "kind" and callee in errors and (k := _text(kw.value)):
                    kinds.add(k)
                if kw.arg == "data" and isinstance(kw.value, ast.Dict):
                    for key, value in zip(kw.value.keys, kw.value.values, strict=True):
                        if key is not None and _text(key) == "kind" and (k := _text(value)):
                            kinds.add(k)
            at = KIND_ARG_CALLS.get(callee)
            if at is not None and len(node.args) > at and (k := _text(node.args[at])):
                kinds.add(k)
    from autocode import errors as engine_errors

    kinds.update(kind for kind, _ in engine_errors._FAULTS.values())
    return kinds


def documented_kinds() -> list[str]:
    return [e.kind for e in (*protocol.ERROR_KINDS, *protocol.REMOTE_ERROR_KINDS)]


def test_the_scan_sees_each_way_of_raising() -> None:
    kinds = raised_kinds()
    # a class attribute, a keyword, domain_error, Problem, _refuse, data={"kind"}, _FAULTS
    for kind in ("taskNotFound", "copyFailed", "confirmationRequired", "inputIgnored",
                 "unauthorized", "workspaceOutsideSession", "noSpace"):
        assert kind in kinds


def test_every_raised_kind_is_documented() -> None:
    assert sorted(raised_kinds() - set(documented_kinds())) == []


def test_every_documented_kind_is_raised() -> None:
    assert sorted(set(documented_kinds()) - raised_kinds()) == []


def test_each_kind_is_declared_once_with_meaning_and_remedy() -> None:
    kinds = documented_kinds()
    assert len(kinds) == len(set(kinds))
    for e in (*protocol.ERROR_KINDS, *protocol.REMOTE_ERROR_KINDS):
        assert e.meaning.strip() and e.what_to_do.strip(), e.kind
