"""The language server object: session state, command registration, messages to the client.

Thin on purpose: each command's work lives in a module under `features/` and
the engine; this module validates arguments (through `protocol`), keeps what
the client declared at `initialize`, and sends everything to the client from
the event loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any, ClassVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from autocode_lsp import __version__, protocol, warmup
from autocode_lsp.errors import invalid_arguments

log = logging.getLogger("autocode_lsp")

Handler = Callable[["AutoCodeServer", Any], Awaitable[Any]]

# What an opted-in client may switch off one by one in `experimental.autocode`.
OPT_IN_KEYS = ("didChange", "askQuestion", "reviewPlan")


class AutoCodeProtocol(LanguageServerProtocol):
    """pygls' protocol plus our `initialize` advertisement and a per-connection `exit`."""

    _server: AutoCodeServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        self._server.remember_client(params)
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {protocol.EXPERIMENTAL_KEY: self._server.advertisement()}
        return result

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        if self._server.end_connection is None:
            yield from super().lsp_exit(*args)
            return
        # TCP and WebSocket: `exit` ends this client's connection, not the listening process.
        self._server.end_connection()


class AutoCodeServer(LanguageServer):
    """One client session. Over TCP/WebSocket each connection gets its own instance."""

    protocol: AutoCodeProtocol

    def __init__(self, *, end_connection: Callable[[], None] | None = None) -> None:
        super().__init__(
            name="autocode-lsp",
            version=__version__,
            protocol_cls=AutoCodeProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
        )
        self.end_connection = end_connection
        self.client_name = "unknown"
        self.opt_in: dict[str, bool] = dict.fromkeys(OPT_IN_KEYS, False)
        self.supports_progress = False
        self.supports_show_document = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._background: set[asyncio.Task[Any]] = set()
        self.state: dict[str, Any] = {}
        """Per-feature session state (e.g. the tasks feature's revision bookkeeping)."""

    # ------------------------------------------------------------------ session

    @property
    def opted_in(self) -> bool:
        return any(self.opt_in.values())

    def remember_client(self, params: types.InitializeParams) -> None:
        self.loop = asyncio.get_running_loop()
        self.loop.set_exception_handler(_quiet_when_cancelled)
        if params.client_info is not None and params.client_info.name:
            self.client_name = params.client_info.name
        caps = params.capabilities
        experimental = caps.experimental if isinstance(caps.experimental, dict) else {}
        opt = experimental.get(protocol.EXPERIMENTAL_KEY)
        if opt is True or isinstance(opt, dict):
            chosen = opt if isinstance(opt, dict) else {}
            self.opt_in = {k: chosen.get(k, True) is not False for k in OPT_IN_KEYS}
        window = caps.window
        self.supports_progress = bool(window and window.work_done_progress)
        self.supports_show_document = bool(
            window and window.show_document and window.show_document.support
        )
        log.info(
            "client %s connected (opted in: %s, progress: %s)",
            self.client_name, self.opted_in, self.supports_progress,
        )

    def advertisement(self) -> dict[str, Any]:
        return {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "serverVersion": __version__,
            "features": available_features(),
        }

    # ------------------------------------------------------------------ to the client

    def in_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call `fn` on the event loop thread (directly when already there)."""
        loop = self.loop
        if loop is None or loop.is_closed() or self.closed:
            return  # an engine thread still reporting after its client went away
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def notify(self, method: str, payload: Any) -> None:
        self.in_loop(self.protocol.notify, method, payload)

    def log_to_client(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.in_loop(
            self.window_log_message, types.LogMessageParams(type=kind, message=message)
        )

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.in_loop(self.window_show_message, types.ShowMessageParams(type=kind, message=message))

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run a coroutine in the background of this session; it ends with the connection."""

        async def guarded() -> Any:
            try:
                return await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background work %s failed", name)
                return None

        task = asyncio.ensure_future(guarded())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def close_session(self) -> None:
        """The connection is gone: stop prompting; tasks stay on disk as they are."""
        self.closed = True
        for task in list(self._background):
            task.cancel()
        for future in list(self.protocol._request_futures.values()):
            if not future.done():
                future.cancel()

    def report_server_error(self, error: Exception, source: Any) -> None:
        from pygls.exceptions import FeatureRequestError

        if source is FeatureRequestError:
            return  # the error already went back to the client as the request's response
        # A broken message must never end the session; log it instead of a popup storm.
        log.error("error while handling a message: %s", error)


def _quiet_when_cancelled(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A client that vanishes mid-command cancels its requests' tasks; pygls' done-callbacks then
    re-raise the cancellation. That is expected, not an error worth a traceback in the log."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        log.debug("a request was cancelled as its connection closed: %s", context.get("message"))
        return
    loop.default_exception_handler(context)


def close_memory_services() -> None:
    """Close the process's memory stores, if any memory command opened one (no import otherwise)."""
    import sys

    module = sys.modules.get("autocode_lsp.memory_services")
    if module is not None:
        module.close_all()


def available_features() -> list[str]:
    """Features whose engine part is installed (cheap: no engine import)."""
    import importlib.util

    modules = {
        "doctor": "autocode.doctor",
        "forget": "autocode.record",
        "prep": "autocode.prep",
        "tasks": "autocode.tasks",
        "memory": "autocode.memory",
    }
    found = []
    for feature in protocol.FEATURES:
        module = modules.get(feature)
        if module is None:
            found.append(feature)
            continue
        try:
            if importlib.util.find_spec(module) is not None:
                found.append(feature)
        except (ImportError, ValueError):
            continue
    return found


FEATURE_MODULES = {
    "core": "core", "doctor": "project", "forget": "project",
    "prep": "prep", "tasks": "tasks", "memory": "memory",
}
"""Which `features/` module handles each protocol feature area."""


def handler_for(name: str) -> Handler:
    """The feature handler of a command; its module is imported on first use, not at start-up."""
    import importlib

    area = FEATURE_MODULES[protocol.COMMAND_FEATURES[name]]
    module = importlib.import_module(f"autocode_lsp.features.{area}")
    handler: Handler = module.HANDLERS[name]
    return handler


def _command(server: AutoCodeServer, name: str) -> None:
    async def run(ls: AutoCodeServer, *arguments: Any) -> Any:
        started = time.perf_counter()
        spec = protocol.COMMANDS_BY_NAME[name]
        warmup.settled()
        handler = handler_for(name)
        try:
            args = protocol.parse_arguments(spec, arguments)
        except protocol.InvalidArguments as exc:
            log.info("%s failed: %s", spec.name, exc)
            raise invalid_arguments(str(exc)) from exc
        try:
            result = await handler(ls, args)
        except JsonRpcException as exc:
            log.info("%s failed: %s", spec.name, exc.message)
            raise
        except Exception as exc:
            log.exception("%s failed unexpectedly", spec.name)
            raise JsonRpcInternalError(
                message=f"{spec.name} failed unexpectedly: {exc}. The server log has the details."
            ) from exc
        log.debug("%s took %.1f ms", spec.name, (time.perf_counter() - started) * 1000)
        return protocol.to_wire(result)

    run.__name__ = name
    server.command(name)(run)


def create_server(*, end_connection: Callable[[], None] | None = None) -> AutoCodeServer:
    """A server with every protocol command registered (handlers load on first use)."""
    server = AutoCodeServer(end_connection=end_connection)
    for name in protocol.COMMAND_FEATURES:
        _command(server, name)

    @server.feature(types.INITIALIZED)
    def initialized(ls: AutoCodeServer, params: types.InitializedParams) -> None:
        ClientLogHandler.attach(ls)
        warmup.start()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: AutoCodeServer, params: Any) -> None:
        ClientLogHandler.detach(ls)
        if ls.end_connection is None:
            # stdio: the session is the process, so its memory stores close now.
            # TCP/WebSocket sessions share them; they close when the listener stops.
            close_memory_services()

    return server


class ClientLogHandler(logging.Handler):
    """Forwards our own log records to the client as `window/logMessage`."""

    _by_server: ClassVar[dict[int, ClientLogHandler]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, server: AutoCodeServer) -> None:
        super().__init__(level=logging.getLogger("autocode_lsp").getEffectiveLevel())
        self.server = server
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    @classmethod
    def attach(cls, server: AutoCodeServer) -> None:
        with cls._lock:
            if id(server) in cls._by_server:
                return
            handler = cls(server)
            cls._by_server[id(server)] = handler
        for name in ("autocode_lsp", "autocode"):
            logging.getLogger(name).addHandler(handler)

    @classmethod
    def detach(cls, server: AutoCodeServer) -> None:
        with cls._lock:
            handler = cls._by_server.pop(id(server), None)
        if handler is not None:
            for name in ("autocode_lsp", "autocode"):
                logging.getLogger(name).removeHandler(handler)

    def emit(self, record: logging.LogRecord) -> None:
        kind = (
            types.MessageType.Error if record.levelno >= logging.ERROR
            else types.MessageType.Warning if record.levelno >= logging.WARNING
            else types.MessageType.Info if record.levelno >= logging.INFO
            else types.MessageType.Log
        )
        try:
            self.server.log_to_client(self.format(record), kind)
        except Exception:
            self.handleError(record)
