"""Load what the first commands need while the editor is still idle.

`initialize` stays lean: nothing here runs before the client's `initialized`.
Then one daemon thread imports the engine modules behind the memory, doctor
and task commands, and builds the static embedding model's vocabulary index
when the model is installed and this machine has none yet (in a child
process: the server's memory does not grow). A command that arrives first
simply waits for the import it needs, as it would without the warm-up.
`AUTOCODE_NO_WARMUP=1` turns it off.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from types import ModuleType

from autocode_lsp import protocol

log = logging.getLogger(__name__)

MODULES = (
    "autocode_lsp.protocol.spec",
    "autocode_lsp.features.core",
    "autocode_lsp.features.memory",
    "autocode_lsp.features.project",
    "autocode_lsp.features.tasks",
    "autocode.memory.pool",
    "autocode.settings",
    "autocode.settings.schema",
    "autocode.doctor",
    "autocode.memory.service",
    "autocode.memory.sqlite_store",
    "autocode.sandbox",  # the first session's reap of what a killed server left (features.tasks)
)
INDEX_MODULES = ("autocode.memory.static_lean", "autocode.memory.embeddings")
"""What building the static model's index needs: imported with the rest, before other threads may."""

_started = threading.Event()
_imported = threading.Event()
SETTLE_TIMEOUT = 30.0


NO_WAIT_FEATURES = frozenset({"core"})
"""Feature areas whose commands touch no engine module (`autocode.protocol.info`): they answer
during the warm-up, so a client's first question at attach is not held up by it."""



def loaded(name: str) -> ModuleType | None:
    """The module `name` when some command already imported it whole; None otherwise (no import).

    While the warm-up thread imports it, the module is in `sys.modules` half made: code that
    only looks at what is loaded (shutdown, protocol.info) must take that as not loaded yet.
    """
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return None if module is None or getattr(spec, "_initializing", False) else module

def settled(command: str | None = None, *, bounded: bool = True) -> None:
    """Wait until the warm-up's imports are done (at once when there is none).

    Commands wait for it rather than import beside it: the engine's memory
    package imports itself circularly, which two threads must not do at once.
    The wait blocks the event loop, as importing there did before the warm-up,
    so messages keep their order (an `exit` right behind a command still comes
    after its answer). A command of a `NO_WAIT_FEATURES` area does not wait
    (the protocol shapes it needs have no such cycle: Python's own per-module
    import lock makes it wait for just that module if the warm-up is loading it).
    Engine work in a worker thread (`errors.engine_call`) waits unbounded: the
    warm-up always ends its imports, and a thread that imported beside it could see a
    half-made module (`cannot import name ... from partially initialized module`).
    """
    if command is not None and protocol.COMMAND_FEATURES.get(command) in NO_WAIT_FEATURES:
        return
    if _started.is_set() and not _imported.is_set():
        _imported.wait(SETTLE_TIMEOUT if bounded else None)


def start() -> None:
    """Start the warm-up once per process (later calls do nothing)."""
    if os.environ.get("AUTOCODE_NO_WARMUP") or _started.is_set():
        return
    _started.set()
    _imported.clear()
    threading.Thread(target=_warm, name="autocode-warmup", daemon=True).start()


def _warm() -> None:
    try:
        for name in [*MODULES, *INDEX_MODULES]:
            try:
                importlib.import_module(name)
            except Exception:  # a module that fails here fails again, with its error, where it is used
                log.debug("warm-up: importing %s failed", name, exc_info=True)
        _prepare_wire()
    finally:
        # Every import of the warm-up is done before another thread may import (even when one
        # failed): engine work in worker threads waits for this.
        _imported.set()
    try:
        # lazy: not needed by the server's `initialize`, which imports this module (loaded above)
        from autocode.memory import static_lean
        from autocode.memory.embeddings import static_model_installed

        if static_model_installed():
            static_lean.ensure_index(static_lean.model_dir() / "tokenizer.json")
    except Exception as exc:  # the first embedding says why, and memory falls back
        log.info("warm-up: the static model's vocabulary index was not built: %s", exc)


def _prepare_wire() -> None:
    """Build the converter's functions for every command's arguments and result now.

    cattrs writes and compiles one function per shape on first use (a few ms
    each); done here, a person's first command of any kind does not pay for it.
    """
    try:
        # lazy: not needed by the server's `initialize`, which imports this module
        from autocode_lsp.protocol import spec

        for command in spec.COMMANDS:
            spec.converter.get_structure_hook(command.args)
            spec.converter.get_unstructure_hook(command.result)
    except Exception:  # the command builds what it needs itself, as without the warm-up
        log.debug("warm-up: preparing the wire shapes failed", exc_info=True)
