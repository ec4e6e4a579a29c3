"""The layering of the project, read from the code's imports.

Every ``import`` and ``from ... import`` statement of ``engine/autocode``,
``server/autocode_lsp`` and ``server/autocode_mcp`` is read with ``ast`` -- including those inside
functions, which hide a dependency from a reader but not from this test.

The rules:

- The engine (``autocode``) never imports the servers (``autocode_lsp``, ``autocode_mcp``) nor
  the CLI (``autocode.cli``). ``autocode.__main__`` is the CLI's entry point and may
  import it.
- The faces (the two servers and the CLI) import nothing below ``autocode.settings`` (the
  package's own names are its contract) and no private name (``_x``; dunders
  are not private) of an engine module, nor a private engine module.
- The faces never resolve settings: no entry point of ``autocode.settings`` that resolves a
  snapshot or takes one (``resolve_settings``, and every export whose signature names a
  ``SettingsSnapshot``, read from the package itself); the engine function they call does.
- The record (``autocode.record``) never imports ``autocode.settings``.
- The leaves (``autocode.gitsafe``, ``autocode.scrub``, ``autocode.errors``, ``autocode.private``,
  ``autocode.atomic``)
  import nothing of the project but ``autocode.errors``.
- The registries (memory store backends, providers, doctor sections, server
  commands) load the modules of their entries only when an entry is used:
  none of them imports an entry's module at its top level, so adding an
  entry never costs start-up.
- No cycle between modules. An edge runs from the importing module to the
  module named in the statement; ``from pkg import name`` points at
  ``pkg.name`` when that is a module, otherwise at ``pkg`` (its
  ``__init__``). ``importlib.import_module("a.literal.name")`` is an edge too.
  Two things are not edges for this rule, and only for it:

  * an import under ``if TYPE_CHECKING:`` -- it never runs, it only names a
    type for mypy (the other rules still apply to it);
  * the implicit import of a package's ``__init__`` that Python performs
    before a submodule, so a package's ``__init__`` importing (re-exporting)
    its own submodules is not a cycle. A submodule importing a *name* from its
    own package's ``__init__`` while that ``__init__`` imports the submodule
    is one, and fails: it works only while the order of the lines happens to
    suit it.

  Every other cycle, whatever its length, fails. Among the server's own modules an import
  under ``if TYPE_CHECKING:`` counts too: the session object imports no feature.
- Nothing imports attrs (``attrs`` or ``attr``): the project's shapes are stdlib dataclasses or the
  engine's pydantic models (docs/dev/architecture.md, "Typed results"). pygls uses attrs inside;
  that is its own business.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"autocode": ROOT / "engine" / "autocode", "autocode_lsp": ROOT / "server" / "autocode_lsp",
           "autocode_mcp": ROOT / "server" / "autocode_mcp"}
FACES = ("autocode_lsp", "autocode_mcp", "autocode.cli")
"""The packages that face a person or a program: they call the engine's public functions."""
LEAVES = ("autocode.gitsafe", "autocode.scrub", "autocode.errors", "autocode.private", "autocode.atomic",
          "autocode.remedy")
LEAF_DATA = ("autocode.errors", "autocode.remedy")
"""What a leaf may import: the errors and the typed remedies they carry (neither imports anything)."""


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (resolved)
    names: tuple[str, ...]  # names taken by ``from target import names``
    line: int
    typing_only: bool = False  # under ``if TYPE_CHECKING:``

    def where(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}" + (f" ({', '.join(self.names)})" if self.names else "")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top, base in SOURCES.items():
        for path in sorted(base.rglob("*.py")):
            parts = [top, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _absolute(module: str, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _typing_only_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(module: str) -> Iterator[Import]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    typing_only = _typing_only_lines(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, (), node.lineno, node.lineno in typing_only)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node.level, node.module)
            plain: list[str] = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield Import(module, sub, (), node.lineno, node.lineno in typing_only)
                else:
                    plain.append(alias.name)
            if plain:
                yield Import(module, target, tuple(plain), node.lineno, node.lineno in typing_only)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("importlib.import_module", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield Import(module, node.args[0].value, (), node.lineno)


def _project(target: str) -> bool:
    return target.split(".")[0] in SOURCES


ALL = [imp for module in MODULES for imp in _imports(module) if _project(imp.target)]


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_every_module_is_read() -> None:
    assert "autocode.tasks.run" in MODULES and "autocode_lsp.server" in MODULES and "autocode_mcp.app" in MODULES
    assert len(ALL) > 100  # the walk sees imports, including function-level ones


def test_engine_never_imports_server_or_cli() -> None:
    bad = [
        imp.where()
        for imp in ALL
        if _within(imp.source, "autocode")
        and not _within(imp.source, "autocode.cli")
        and imp.source != "autocode.__main__"
        and any(_within(imp.target, face) for face in FACES)
    ]
    assert bad == []


def _faces(module: str) -> bool:
    return any(_within(module, face) for face in FACES)


def test_server_and_cli_use_settings_package_only() -> None:
    bad = [
        imp.where()
        for imp in ALL
        if _faces(imp.source) and imp.target.startswith("autocode.settings.")
    ]
    assert bad == []


def test_server_and_cli_take_no_private_engine_names() -> None:
    bad = [
        imp.where()
        for imp in ALL
        if _faces(imp.source)
        and _within(imp.target, "autocode")
        and not _faces(imp.target)
        and (any(_private(part) for part in imp.target.split(".")) or any(_private(n) for n in imp.names))
    ]
    assert bad == []


def _settings_resolvers() -> set[str]:
    """The exports of `autocode.settings` that resolve settings: `resolve_settings` and every
    function whose signature (a parameter or the result) is a `SettingsSnapshot` or that takes a
`snapshot`. Read from the
    package, so a new one is covered the day it is exported."""
    import inspect

    import autocode.settings as settings

    found = set()
    for name in settings.__all__:
        value = getattr(settings, name)
        if not inspect.isfunction(value):
            continue
        annotations = [str(a) for a in value.__annotations__.values()]
        takes_snapshot = "snapshot" in inspect.signature(value).parameters
        if name == "resolve_settings" or takes_snapshot or any("SettingsSnapshot" in a for a in annotations):
            found.add(name)
    return found


def _names_used(module: str) -> set[str]:
    """Every name and attribute a module's code uses (`settings.resolve_settings(...)` too)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


def test_faces_never_resolve_settings() -> None:
    """DESIGN: the faces call the engine's functions, which resolve the settings they need."""
    resolvers = _settings_resolvers()
    assert {"resolve_settings", "require_trust", "sandbox_relaxations"} <= resolvers  # the reading works
    bad = [
        imp.where()
        for imp in ALL
        if _faces(imp.source)
        and _within(imp.target, "autocode.settings")
        and (set(imp.names) & resolvers or imp.target.rsplit(".", 1)[-1] in resolvers)
    ]
    takes_settings = {imp.source for imp in ALL if _faces(imp.source) and _within(imp.target, "autocode.settings")}
    bad += [f"{module} uses {', '.join(sorted(_names_used(module) & resolvers))}"
            for module in sorted(takes_settings) if _names_used(module) & resolvers]
    assert bad == []


def test_record_never_imports_settings() -> None:
    bad = [
        imp.where()
        for imp in ALL
        if _within(imp.source, "autocode.record") and _within(imp.target, "autocode.settings")
    ]
    assert bad == []


def test_leaves_import_only_errors() -> None:
    bad = [
        imp.where()
        for imp in ALL
        if imp.source in LEAVES and imp.target not in LEAF_DATA and imp.target != imp.source
    ]
    assert bad == []


REGISTRIES: dict[str, tuple[str, ...]] = {
    "autocode.memory.backends": ("autocode.memory.sqlite_store", "autocode.memory.pg_store"),
    "autocode.providers": ("autocode.providers.fixture", "autocode.providers.openai", "autocode.providers.agent"),
    "autocode.doctor": ("autocode.memory", "autocode.prep", "autocode.record"),
    "autocode_lsp.commands": ("autocode_lsp.features",),
}
"""Each registry and the modules its built-in entries live in."""


def _top_level_imports(module: str) -> set[str]:
    """What `module` imports when it is imported (not inside a function or class)."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(module, node.level, node.module)
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit([n for n in getattr(node, field, []) if isinstance(n, ast.stmt)])

    visit(ast.parse(MODULES[module].read_text(encoding="utf-8")).body)
    return found


def test_registries_load_their_entries_when_used() -> None:
    bad = [
        f"{registry} imports {target} at its top level"
        for registry, entries in REGISTRIES.items()
        for target in _top_level_imports(registry)
        if any(_within(target, entry) for entry in entries)
    ]
    assert bad == []


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for imp in ALL:
        if imp.typing_only:
            continue
        target = imp.target
        while target not in MODULES and "." in target:
            target = target.rsplit(".", 1)[0]
        if target not in MODULES or target == imp.source:
            continue
        graph[imp.source].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_server_modules_form_no_circle_even_through_type_imports() -> None:
    """The server's modules are read in one direction: the features (and the modules they use)
    import the session object, which imports none of them; `setup` wires the two together.
    A circle through an `if TYPE_CHECKING:` import does not fail at run time, but it means a
    reader cannot understand any one of its modules without all the others."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES if _within(m, "autocode_lsp")}
    for imp in ALL:
        if imp.source not in graph:
            continue
        target = imp.target
        while target not in MODULES and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in graph and target != imp.source:
            graph[imp.source].add(target)
    assert _cycles(graph) == []


def test_no_module_imports_attrs() -> None:
    bad = [
        imp.where()
        for module in MODULES
        for imp in _imports(module)
        if _within(imp.target, "attrs") or _within(imp.target, "attr")
    ]
    assert bad == [], "the project's shapes are dataclasses (or the engine's pydantic models), never attrs classes"


def test_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


LONG_MODULE = 400
"""Lines above which a module says, at its top, why it is one module (issue 17)."""


def test_long_modules_say_why_they_are_kept_whole() -> None:
    """A module over about 400 lines has a docstring paragraph starting `Kept whole:` with its reason."""
    unexplained = []
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG_MODULE:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        reasons = [p for p in doc.split("\n\n") if p.startswith("Kept whole:") and len(p.split()) >= 8]
        if not reasons:
            unexplained.append(f"{module} ({text.count(chr(10))} lines)")
    assert not unexplained, "modules over 400 lines without a `Kept whole:` reason: " + ", ".join(unexplained)


def _is_import(lines: list[str], i: int) -> bool:
    return lines[i].lstrip().startswith(("import ", "from "))


def test_imports_inside_functions_say_why() -> None:
    """An import inside a function is there for a start-up budget (or an optional dependency, or a
    registry entry loaded when used); a comment on its line, or on the line above its group of
    imports, says which. Every other import belongs at the top of its module."""
    unexplained = []
    for module, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                row = node.lineno - 1

                # The first import of a group (its sections may be split by one blank line)
                # carries the reason.
                while row > 0 and "#" not in lines[row]:
                    if _is_import(lines, row - 1):
                        row -= 1
                    elif row > 1 and not lines[row - 1].strip() and _is_import(lines, row - 2):
                        row -= 2
                    else:
                        break
                if "#" in lines[node.lineno - 1] or "#" in lines[row] or lines[row - 1].lstrip().startswith("#"):
                    continue
                unexplained.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    assert not unexplained, "imports inside functions without a reason:\n" + "\n".join(unexplained)
