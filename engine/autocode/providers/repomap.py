"""A repository map for the model's first message: files with their top-level definitions.

The files the task cites come first (the investigator's and the plan's, in
that order), then the rest of the copy's inventory in path order, until the
map reaches its size limit; what does not fit is counted, and the model can
list it with its tools. Python files are read with `ast` (classes with their
methods, functions with their parameters); JavaScript, TypeScript, Go, Rust
and Java get their top-level declarations from one line pattern each, which
is enough to name them and costs no parser dependency; other files are
listed by path. A file that cannot be read or parsed is listed by path.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

MAP_CHARS = 8_000
MAP_FILES = 500  # inventory paths a task keeps for its map
MAX_FILE_BYTES = 256_000  # larger files are listed, not parsed
PER_FILE = 8  # definitions shown per file

_DECLARATIONS = {
    (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx"): re.compile(
        r"^(?:export\s+(?:default\s+)?)?(?:async\s+)?(?:function\*?\s+(\w+)|class\s+(\w+)|(?:const|let)\s+(\w+)\s*=\s*(?:async\s*)?\(|interface\s+(\w+)|type\s+(\w+)\s*=)",
        re.MULTILINE,
    ),
    (".go",): re.compile(r"^(?:func\s+(?:\([^)]*\)\s*)?(\w+)|type\s+(\w+))", re.MULTILINE),
    (".rs",): re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:fn\s+(\w+)|struct\s+(\w+)|enum\s+(\w+)|trait\s+(\w+))", re.MULTILINE),
    (".java",): re.compile(r"^(?:public\s+|final\s+|abstract\s+)*(?:class|interface|enum|record)\s+(\w+)", re.MULTILINE),
}


def render(root: Path, first: Iterable[str], rest: Iterable[str], limit: int = MAP_CHARS) -> str:
    """The map of `first` then `rest` (paths relative to `root`), at most `limit` characters."""
    paths = list(dict.fromkeys(p for p in [*first, *rest] if p and not p.endswith("/")))
    lines: list[str] = []
    used = 0
    shown = 0
    for rel in paths:
        entry = _entry(root, rel)
        if entry is None:
            continue
        if used + len(entry) + 1 > limit and shown:
            break
        lines.append(entry)
        used += len(entry) + 1
        shown += 1
    left = len(paths) - shown
    if left > 0:
        lines.append(f"(and {left} more file(s); list_files shows them)")
    return "\n".join(lines)


def _entry(root: Path, rel: str) -> str | None:
    path = root / rel
    try:
        if not path.is_file() or (path.is_symlink() and not path.resolve().is_relative_to(root.resolve())):
            return None
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    names = _definitions(path, size)
    if not names:
        return rel
    more = f", +{len(names) - PER_FILE}" if len(names) > PER_FILE else ""
    return f"{rel}: " + ", ".join(names[:PER_FILE]) + more


def _definitions(path: Path, size: int) -> list[str]:
    if size > MAX_FILE_BYTES:
        return []
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if suffix == ".py":
        return _python(text)
    for suffixes, pattern in _DECLARATIONS.items():
        if suffix in suffixes:
            return [next(g for g in m.groups() if g) for m in pattern.finditer(text)]
    return []


def _python(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append(f"def {node.name}({_params(node.args)})")
        elif isinstance(node, ast.ClassDef):
            methods = [n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
            shown = ", ".join(m for m in methods if not m.startswith("__") or m == "__init__")
            out.append(f"class {node.name}" + (f" [{shown}]" if shown else ""))
    return out


def _params(args: ast.arguments) -> str:
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    if args.vararg:
        names.append("*" + args.vararg.arg)
    if args.kwarg:
        names.append("**" + args.kwarg.arg)
    return ", ".join(names)
