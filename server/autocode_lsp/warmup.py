"""Load what the first commands need while the editor is still idle.

`initialize` stays lean: nothing here runs before the client's `initialized`.
Then one daemon thread imports the engine modules behind the memory, doctor
and task commands, and builds the static embedding model's vocabulary index
when the model is installed and this machine has none yet (in a child
process: the server's memory does not grow). A command that arrives first
simply waits for the import it needs, as it would without the warm-up.
`AUTOCODE_NO_WARMUP=1` turns it off.

The memory commands are what a person (or an agent) uses first, so their
modules come first (`MEMORY_MODULES`). A memory command waits only for those;
its engine work then runs in the warm-up thread itself, between two of the
later imports (`engine_work`), so no two threads ever import engine modules at
once and the first memory command does not wait for the task and doctor
modules it does not use.
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import ModuleType
from typing import Any

from autocode_lsp import protocol

log = logging.getLogger(__name__)

MEMORY_MODULES = (
    "autocode_lsp.protocol.spec",
    "autocode_lsp.features.core",
    "autocode_lsp.features.memory",
    "autocode.memory.pool",
    "autocode.settings",
    "autocode.settings.schema",
    "autocode.memory.service",
    "autocode.memory.sqlite_store",
)
"""Everything a memory command imports, on the event loop and in its engine work: once these are
in, a memory command imports nothing (tests/server/test_server_warmup_imports.py checks it)."""
INDEX_MODULES = ("autocode.memory.static_lean", "autocode.memory.embeddings")
"""What building the static model's index needs (and a search with memories): imported with the
memory modules, before other threads may."""
LATER_MODULES = (
    "autocode_lsp.features.project",
    "autocode_lsp.features.tasks",
    "autocode.doctor",
    "autocode.sandbox",  # the first session's reap of what a killed server left (features.tasks)
)
MODULES = (*MEMORY_MODULES, *INDEX_MODULES, *LATER_MODULES)
EARLY_FEATURES = frozenset({"memory"})
"""Feature areas whose commands wait only for `MEMORY_MODULES` (their engine work then runs in the
warm-up thread until it is done)."""

_started = threading.Event()
_early = threading.Event()
_imported = threading.Event()
_waiting: list[tuple[Callable[[], Any], Future[Any]]] = []
_waiting_lock = threading.Lock()
_arrivals = threading.Condition()
_arriving = 0
"""Early commands past their wait whose engine work is not handed over yet (nor given up)."""


class _Arrival:
    """One early command on its way from `settled` to `engine_work` (the event loop runs that
    stretch without a pause, so the warm-up waits for it before its next import)."""

    done = False


_early_command: contextvars.ContextVar[_Arrival | None] = contextvars.ContextVar("autocode_early_command", default=None)
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
    A command of an `EARLY_FEATURES` area waits for `MEMORY_MODULES` only, and marks its
    own context (an asyncio task's) so that its engine work goes to the warm-up thread.
    """
    feature = protocol.COMMAND_FEATURES.get(command) if command is not None else None
    if feature in NO_WAIT_FEATURES:
        return
    if _started.is_set() and not _imported.is_set():
        if feature in EARLY_FEATURES:
            global _arriving
            with _arrivals:
                _arriving += 1
            _early_command.set(_Arrival())
            _early.wait(SETTLE_TIMEOUT if bounded else None)
            return
        _imported.wait(SETTLE_TIMEOUT if bounded else None)


def engine_work(call: Callable[[], Any]) -> Future[Any] | None:
    """Hand an early command's engine work to the warm-up thread while it still imports.

    The future it returns is done once the warm-up thread ran `call` (before its next import);
    None when the caller is not an early command or the warm-up is over: then the work runs in
    a worker thread as usual (`errors.engine_call`).
    """
    arrival = _early_command.get()
    if arrival is None:
        return None
    try:
        with _waiting_lock:
            if _imported.is_set():
                return None
            future: Future[Any] = Future()
            _waiting.append((call, future))
            return future
    finally:
        _arrived(arrival)


def command_ended() -> None:
    """An early command ended (after its answer, or its error before any engine work)."""
    _arrived(_early_command.get())


def _arrived(arrival: _Arrival | None) -> None:
    global _arriving
    if arrival is None or arrival.done:
        return
    arrival.done = True
    with _arrivals:
        _arriving -= 1
        _arrivals.notify_all()


def _let_arrivals_hand_over() -> None:
    """Wait until the early commands already past their wait have handed their work over."""
    with _arrivals:
        _arrivals.wait_for(lambda: _arriving <= 0, SETTLE_TIMEOUT)


def start() -> None:
    """Start the warm-up once per process (later calls do nothing)."""
    if os.environ.get("AUTOCODE_NO_WARMUP") or _started.is_set():
        return
    _started.set()
    _early.clear()
    _imported.clear()
    threading.Thread(target=_warm, name="autocode-warmup", daemon=True).start()


def _warm() -> None:
    try:
        for name in [*MEMORY_MODULES, *INDEX_MODULES]:
            _import(name)
        _prepare_wire(EARLY_FEATURES)
        _early.set()
        _let_arrivals_hand_over()
        for name in LATER_MODULES:
            _later(name)
        _serve_waiting()
        _prepare_wire()
    finally:
        # Every import of the warm-up is done before another thread may import (even when one
        # failed): engine work in worker threads waits for this.
        _early.set()
        _finish()
    try:
        # lazy: not needed by the server's `initialize`, which imports this module (loaded above)
        from autocode.memory import static_lean
        from autocode.memory.embeddings import static_model_installed

        if static_model_installed():
            static_lean.ensure_index(static_lean.model_dir() / "tokenizer.json")
    except Exception as exc:  # the first embedding says why, and memory falls back
        log.info("warm-up: the static model's vocabulary index was not built: %s", exc)


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:  # a module that fails here fails again, with its error, where it is used
        log.debug("warm-up: importing %s failed", name, exc_info=True)


def _later(name: str) -> None:
    """One of the later imports, after the early commands' work that is waiting."""
    _let_arrivals_hand_over()
    _serve_waiting()
    _import(name)


def _serve_waiting() -> None:
    """Run, in this thread, the early commands' engine work handed over so far."""
    while True:
        with _waiting_lock:
            if not _waiting:
                return
            call, future = _waiting.pop(0)
        _run(call, future)


def _finish() -> None:
    """Serve what is still waiting and declare the imports done, so nothing is handed over later."""
    while True:
        with _waiting_lock:
            if not _waiting:
                _imported.set()
                return
            call, future = _waiting.pop(0)
        _run(call, future)


def _run(call: Callable[[], Any], future: Future[Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = call()
    except BaseException as exc:  # the command's own error, raised again where it awaits
        future.set_exception(exc)
    else:
        future.set_result(result)


def _prepare_wire(features: frozenset[str] | None = None) -> None:
    """Build the converter's functions for every command's arguments and result now (those of
    `features` only, when given), except those built already.

    cattrs writes and compiles one function per shape on first use (a few ms
    each); done here, a person's first command of any kind does not pay for it.
    """
    try:
        # lazy: not needed by the server's `initialize`, which imports this module
        from autocode_lsp.protocol import spec

        for command in spec.COMMANDS:
            area = protocol.COMMAND_FEATURES.get(command.name)
            if features is not None and area not in features:
                continue
            if features is None and area in EARLY_FEATURES:
                continue
            spec.converter.get_structure_hook(command.args)
            spec.converter.get_unstructure_hook(command.result)
    except Exception:  # the command builds what it needs itself, as without the warm-up
        log.debug("warm-up: preparing the wire shapes failed", exc_info=True)
