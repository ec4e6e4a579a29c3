"""Extension modules: code outside AutoCode that adds registry entries when it is imported.

Every extension point is a registry a module adds to on import: a memory store
backend (`autocode.memory.backends.register`), a model provider
(`autocode.providers.register`), a doctor section (`autocode.doctor.register_section`)
and a server command (`autocode_lsp.commands.command`). `AUTOCODE_EXTENSIONS`
names the modules to import (comma-separated, importable from `sys.path`); the
CLI and the language server load them once at start, before they list or run
anything. Unset, this costs nothing.

A module that cannot be imported is an error that names it: an extension the
person asked for is never skipped silently.
"""

from __future__ import annotations

import importlib
import os
import threading

from autocode.errors import UsageError

ENV = "AUTOCODE_EXTENSIONS"
_loaded: list[str] = []
_lock = threading.Lock()


def names() -> list[str]:
    return [n.strip() for n in os.environ.get(ENV, "").split(",") if n.strip()]


def load() -> list[str]:
    """Import the modules `AUTOCODE_EXTENSIONS` names (each once per process); returns those loaded."""
    with _lock:
        for name in names():
            if name in _loaded:
                continue
            try:
                importlib.import_module(name)
            except ImportError as exc:
                raise UsageError(
                    f"{ENV} names the module {name!r}, which cannot be imported ({exc}); "
                    "install it or fix the name"
                ) from exc
            _loaded.append(name)
        return list(_loaded)
