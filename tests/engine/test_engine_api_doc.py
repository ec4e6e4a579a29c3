"""docs/dev/engine-api.md stays true: every signature it writes exists with those parameters.

The page is written by hand because most of it is contract prose (what a function promises,
which error it raises, what a field means) that no signature carries; what can go stale
unnoticed is the part a signature does carry. So each code span shaped like a call,
`name(a, b=1, *, c=None)`, is looked up in the engine and compared with the real signature:

- the name is found: in the module its section is about (`## memory (`autocode.memory`)`),
  as a dotted path (`record.location.checked_folder`, `autocode.detect.detect_tests`), as a
  method of a class that module exports (`save` is `MemoryService.save`), or through a
  receiver the page names for an instance (`snapshot.value`, `run.answer`);
- every parameter written exists, every parameter without a default is written (unless the
  span says `...`: a part of the list), and a default written is the real default.

Spans that are not the engine's functions (the shape of a callback the caller passes, a
generic `to_dict()`) are listed in `NOT_SIGNATURES` with the reason.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "dev" / "engine-api.md"
SECTION = re.compile(r"^## [^(]*\(`([\w.]+)`\)")
SPAN = re.compile(r"`([A-Za-z_][\w.]*)\(([^`]*?)\)[^`]*`")

NOT_SIGNATURES = {
    "to_dict": "every result's JSON form, described once at the top of the page",
    "on_change": "the shape of a callback the caller passes",
    "progress": "the shape of a callback the caller passes",
    "close": "the context manager's own close",
    "receipt": "the field of a recall receipt, written as its rendering",
    "render": "the rendering of a receipt or a doctor section, named in prose",
    "value": "`snapshot.value()` named again in prose",
    "snapshot": "`run.snapshot()` named again in prose",
    "details": "the `details()` of a task, named in prose",
    "cancel": "a task's cancel, named in prose",
    "resume": "a task's resume, named in prose",
    "build": "a doctor section provider's shape (the registry's protocol)",
    "inv.paths": "a field of the inventory, named in prose",
}
"""Call-shaped spans that are not an engine signature to check, with why."""

RECEIVERS = {
    "snapshot": "autocode.settings:SettingsSnapshot",
    "settings": "autocode.settings:SettingsSnapshot",
    "run": "autocode.tasks:TaskRun",
    "service": "autocode.memory:MemoryService",
    "Memory": "autocode.memory:Memory",
    "TaskRun": "autocode.tasks:TaskRun",
    "memory": "autocode.memory:MemoryService",
}
"""Names the page uses for an instance (or a class) before a method."""


@dataclass(frozen=True)
class Span:
    module: str | None
    name: str
    params: str
    line: int


def _sections() -> list[str]:
    found = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        section = SECTION.match(line)
        if section and section.group(1).startswith("autocode."):
            found.append(section.group(1))
    return found


def spans() -> Iterator[Span]:
    module = None
    for number, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), start=1):
        section = SECTION.match(line)
        if section:
            module = section.group(1)
            continue
        if line.startswith("## "):
            module = None
        for name, params in SPAN.findall(line):
            yield Span(module, name, params, number)


def _attr(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _module_then_attr(dotted: str) -> Any:
    """`a.b.c.f` as the longest importable module `a.b.c` and its attribute `f`."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            return _attr(module, ".".join(parts[cut:]))
        except AttributeError:
            return None
    return None


def _class(ref: str) -> Any:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def resolve(span: Span) -> list[Callable[..., Any]]:
    """What a span's name may be; the span is right when it fits one of them."""
    name = span.name
    head, _, rest = name.partition(".")
    if name.startswith(("autocode.", "autocode_lsp.")):
        return [f] if (f := _module_then_attr(name)) is not None else []
    if rest:
        found = _module_then_attr(f"autocode.{name}")
        if found is None and head in RECEIVERS:
            found = getattr(_class(RECEIVERS[head]), rest, None)
        return [found] if found is not None else []
    if span.module is None:
        return []
    modules = [span.module, *(m for m in SECTIONS if m != span.module)]  # a face's section names engine parts
    for module_name in modules:
        module = importlib.import_module(module_name)
        for where in [module, *_submodules(module)]:
            found = getattr(where, name, None)
            if callable(found):
                return [found]
        methods = [getattr(cls, name) for cls in _classes(module) if callable(getattr(cls, name, None))]
        if methods:
            return methods
    return []


def _submodules(module: Any) -> list[Any]:
    path = getattr(module, "__path__", None)
    if path is None:
        return []
    found = []
    for child in sorted(Path(path[0]).glob("*.py")):
        if child.stem.startswith("_"):
            continue
        try:
            found.append(importlib.import_module(f"{module.__name__}.{child.stem}"))
        except ImportError:
            continue
    return found


def _classes(module: Any) -> list[type]:
    seen = [v for k, v in vars(module).items() if inspect.isclass(v) and not k.startswith("_")]
    for submodule in _submodules(module):
        seen += [v for k, v in vars(submodule).items() if inspect.isclass(v) and not k.startswith("_")
                 and v.__module__.startswith(module.__name__)]
    return seen


SECTIONS = _sections()


@dataclass(frozen=True)
class Written:
    names: list[str]
    defaults: dict[str, str]
    partial: bool


def written(params: str) -> Written | None:
    """The parameters a span writes; None when they are a description rather than a list."""
    names: list[str] = []
    defaults: dict[str, str] = {}
    partial = False
    for item in _split(params):
        item = item.strip()
        if not item:
            continue
        if item == "...":
            partial = True
            continue
        if item == "*":
            continue
        name, _, default = item.lstrip("*").partition("=")
        name = name.split(":")[0].strip()
        if not name.isidentifier():
            return None
        names.append(name)
        if default.strip():
            defaults[name] = default.strip()
    return Written(names, defaults, partial)


def _split(params: str) -> list[str]:
    items, depth, current, quote = [], 0, "", ""
    for char in params:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        current += char
    return [*items, current]


def problems(span: Span, target: Callable[..., Any]) -> list[str]:
    params = written(span.params)
    if params is None:
        return []
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    real = {n: p for n, p in signature.parameters.items() if n not in ("self", "cls")}
    where = f"line {span.line}: {span.name}({span.params})"
    found = [f"{where}: no parameter {n!r} (the real one: {signature})" for n in params.names if n not in real]
    if not params.partial:
        required = [n for n, p in real.items() if p.default is p.empty
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        found += [f"{where}: leaves out the required {n!r} (the real one: {signature})"
                  for n in required if n not in params.names]
    for name, text in params.defaults.items():
        if name not in real or real[name].default is inspect.Parameter.empty:
            continue
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        if value != real[name].default:
            found.append(f"{where}: {name} defaults to {real[name].default!r}, not {text}")
    return found


def test_every_signature_on_the_page_is_the_engines() -> None:
    found: list[str] = []
    checked = 0
    for span in spans():
        if span.name in NOT_SIGNATURES:
            continue
        targets = resolve(span)
        if not targets:
            found.append(f"line {span.line}: {span.name}({span.params}) is not an engine function")
            continue
        checked += 1
        said = [problems(span, target) for target in targets]
        if all(said):
            found += said[0]
    assert checked > 80  # the page's spans were read
    assert set(NOT_SIGNATURES) <= {span.name for span in spans()}  # no excuse outlives its span
    assert found == [], "docs/dev/engine-api.md disagrees with the engine:\n" + "\n".join(found)


def test_the_check_sees_a_wrong_parameter_and_a_wrong_default() -> None:
    span = Span("autocode.scrub", "redact", "text, workspace=None, env=None, *, secrets=False, colour=True", 1)
    [target] = resolve(span)
    said = problems(span, target)
    assert any("'colour'" in line for line in said) and any("secrets defaults to True" in line for line in said)
    [output] = resolve(Span("autocode.gitsafe", "output", "", 1))
    assert problems(Span("autocode.gitsafe", "output", "args", 1), output)  # leaves out the required cwd
    assert resolve(Span("autocode.gitsafe", "no_such_function", "", 1)) == []
