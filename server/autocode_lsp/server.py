"""The language server object: session state, the lifecycle gate, messages to the client.

Thin on purpose: each command's work lives in a module under `features/` and
the engine, and `setup.py` registers the commands on a session; this module
keeps what the client declared at `initialize` and sends everything to the
client from the event loop thread. It imports no feature (the features import
it for its type), so the server's modules form no circle.

Kept whole: the session object, its lifecycle (initialize, shutdown, the
connection's end) and the paths that carry messages from worker threads to the
client's event loop are one concern.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any, ClassVar

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from autocode_lsp import __version__, gate, pathmap, protocol, warmup
from autocode_lsp.logscrub import ScrubbingFormatter
from autocode_lsp.pathmap import PathMap, PathMapError
from autocode_lsp.security import STDIO, Access

log = logging.getLogger("autocode_lsp")

Handler = Callable[["AutoCodeServer", Any], Awaitable[Any]]

# What an opted-in client may switch off one by one in `experimental.autocode`.
OPT_IN_KEYS = ("didChange", "askQuestion", "reviewPlan", "saveDocuments")


SERVER_NOT_INITIALIZED = gate.SERVER_NOT_INITIALIZED


class UnreadableMessage(Exception):
    """A request whose params cannot be read as its method's; answered with -32602."""


def _json_kind(value: Any) -> str:
    return {str: "string", dict: "object", bool: "boolean", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )


class AutoCodeProtocol(LanguageServerProtocol):
    """pygls' protocol plus the lifecycle gate, our `initialize` advertisement and a
    per-connection `exit`."""

    _server: AutoCodeServer

    def handle_message(self, message: Any) -> None:
        server = self._server
        if server.refused:
            return  # the connection is closing; nothing more of it runs
        if not server.ready:
            self._before_initialize(message)
            return
        super().handle_message(message)

    def _before_initialize(self, message: Any) -> None:
        """The LSP lifecycle: only `initialize` (and `exit`) before a successful `initialize`.

        Over a network transport `initialize` must also carry the token; anything else
        gets one error and the connection is closed before any command can run.
        """
        server = self._server
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        if method == types.INITIALIZE and msg_id is not None:
            token = gate.token_of(getattr(message, "params", None))
            if server.access.token_ok(token):
                server.ready = True
                super().handle_message(message)
                return
            what = "no token" if token is None else "a wrong token"
            log.warning("refused a client that sent %s in initialize", what)
            self._refuse(msg_id, REQUEST_FAILED_CODE, "unauthorized", gate.unauthorized_text(what))
            return
        if method == types.EXIT and msg_id is None:
            super().handle_message(message)
            return
        if msg_id is not None and method is not None:
            shown = gate.shorten(str(method))
            log.warning("refused %s before initialize", shown)
            self._refuse(
                msg_id, SERVER_NOT_INITIALIZED, "serverNotInitialized",
                gate.not_initialized_text(shown, network=server.access.network),
                close=server.access.network,
            )
            return
        if server.access.network:
            log.warning(
                "refused a message before initialize: %s",
                f"the notification {gate.shorten(str(method))}" if method else "a response",
            )
            server.refused = True
            if server.end_connection is not None:
                server.end_connection()
        # stdio: notifications before initialize are dropped, as the spec says.

    def structure_message(self, data: dict[str, Any]) -> Any:
        # lsprotocol's converter reads a string `arguments` as a list of its characters and an
        # object as a list of its keys: say what was wrong instead of acting on that.
        if data.get("method") == types.WORKSPACE_EXECUTE_COMMAND and "jsonrpc" in data:
            params = data.get("params")
            arguments = params.get("arguments") if isinstance(params, dict) else None
            if not isinstance(params, dict) or not isinstance(params.get("command"), str):
                raise UnreadableMessage("`params.command` is not a string")
            if arguments is not None and not isinstance(arguments, list):
                raise UnreadableMessage(f"`arguments` is a JSON {_json_kind(arguments)}, not a list")
        return super().structure_message(data)

    def answer_unreadable(self, body: bytes | str, error: Exception) -> None:
        """A JSON object pygls could not read as its method's params (`arguments` that is no list,
        a `command` that is no string, ...): a request among them still gets its error reply."""
        try:
            message = json.loads(body)
        except ValueError:
            return
        method = message.get("method") if isinstance(message, dict) else None
        msg_id = gate.usable_id(message.get("id")) if isinstance(message, dict) else None
        if msg_id is None or not isinstance(method, str) or self._server.refused:
            log.warning("dropped a message that does not fit the protocol: %s", error)
            return
        shown = gate.shorten(method)
        why = f" ({error})" if isinstance(error, UnreadableMessage) else ""
        text = f"{shown}: the params do not have the shape LSP gives this method{why}"
        if method == types.WORKSPACE_EXECUTE_COMMAND:
            text += (
                "; send {\"command\": \"autocode.…\", \"arguments\": [{…}]}: `command` a string, "
                "`arguments` a list holding one JSON object (docs/protocol.md has each command's object)"
            )
        log.warning("answered %s with invalid params: %s", shown, error.__cause__ or error)
        self._send_response(
            msg_id, None,
            types.ResponseError(code=protocol.INVALID_PARAMS, message=text,
                                data={"kind": "invalidArguments", "message": text}),
        )

    def _refuse(self, msg_id: Any, code: int, kind: str, text: str, *, close: bool = True) -> None:
        self._send_response(
            msg_id, None, types.ResponseError(code=code, message=text, data={"kind": kind, "message": text})
        )
        if close:
            self._server.refused = True
            if self._server.end_connection is not None:
                self._server.end_connection()

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        self._server.remember_client(params)
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {protocol.EXPERIMENTAL_KEY: self._server.advertisement()}
        return result

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        # pygls cancels the requests still under way while it walks its table of them, and a
        # cancel removes its entry from that table: with one under way (an approval waiting for
        # the task's tests when the editor closes) `shutdown` failed with "dictionary changed
        # size during iteration", and a client may then never send `exit` (pytest-lsp's did
        # not). The same steps, on a copy.
        handler = self.fm.features.get(types.SHUTDOWN)
        if handler is not None:
            yield handler, args, None
        under_way = [future for msg_id, future in self._request_futures.items()
                     if msg_id != self.msg_id and not future.done()]
        for future in under_way:
            future.cancel()
        self._shutdown = True
        return None

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

    def __init__(
        self, *, end_connection: Callable[[], None] | None = None, access: Access = STDIO
    ) -> None:
        super().__init__(
            name="autocode-lsp",
            version=__version__,
            protocol_cls=AutoCodeProtocol,
            converter_factory=_shared_converter,
            # Open documents are followed so an apply merges into unsaved buffers.
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.end_connection = end_connection
        self.access = access
        self.ready = False
        """True once an `initialize` (with the token, on a network transport) was accepted."""
        self.refused = False
        """True once this connection was refused; nothing more it sends is handled."""
        self.client_name = ""
        """`clientInfo.name`, else a name from the connection (`fallback_name`); never empty."""
        self.connection = "stdio"
        """How the client is connected, for a client that does not name itself (set by `transport`)."""
        self.opt_in: dict[str, bool] = dict.fromkeys(OPT_IN_KEYS, False)
        self.supports_progress = False
        self.supports_show_document = False
        self.supports_apply_edit = False
        self.supports_push_diagnostics = False
        self.supports_pull_diagnostics = False
        self.supports_diagnostic_refresh = False
        self.supports_lens_refresh = False
        self.workspace_edit_caps: dict[str, Any] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._background: set[asyncio.Task[Any]] = set()

        self.path_map = pathmap.DEFAULT
        """How this session's editor names the server's folders (`--path-map`, `initialize`)."""
        self.state: dict[str, Any] = {}
        """Per-feature session state (e.g. the tasks feature's revision bookkeeping)."""

    # ------------------------------------------------------------------ session

    @property
    def opted_in(self) -> bool:
        return any(self.opt_in.values())

    def remember_client(self, params: types.InitializeParams) -> None:
        self.loop = asyncio.get_running_loop()
        if self.loop.get_exception_handler() is None:  # a listener sets its own (gate)
            self.loop.set_exception_handler(_quiet_when_cancelled)
        if params.client_info is not None and params.client_info.name:
            self.client_name = params.client_info.name
        else:
            self.client_name = fallback_name(self.connection)
        caps = params.capabilities
        experimental = caps.experimental if isinstance(caps.experimental, dict) else {}
        opt = experimental.get(protocol.EXPERIMENTAL_KEY)
        if opt is True or isinstance(opt, dict):
            chosen = opt if isinstance(opt, dict) else {}
            self.opt_in = {k: chosen.get(k, True) is not False for k in OPT_IN_KEYS}
        self._remember_path_map(params.initialization_options)
        window = caps.window
        self.supports_progress = bool(window and window.work_done_progress)
        self.supports_show_document = bool(
            window and window.show_document and window.show_document.support
        )
        ws = caps.workspace
        self.supports_apply_edit = bool(ws and ws.apply_edit)
        text = caps.text_document
        self.supports_push_diagnostics = bool(text and text.publish_diagnostics)
        self.supports_pull_diagnostics = bool(text and text.diagnostic)
        self.supports_diagnostic_refresh = bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)
        self.supports_lens_refresh = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        edit_caps = ws.workspace_edit if ws else None
        self.workspace_edit_caps = {
            "documentChanges": bool(edit_caps and edit_caps.document_changes),
            "resourceOperations": [str(getattr(op, "value", op)) for op in (edit_caps.resource_operations or [])]
            if edit_caps else [],
        }
        log.info(
            "client %s connected (opted in: %s, progress: %s, applyEdit: %s)",
            self.client_name, self.opted_in, self.supports_progress, self.supports_apply_edit,
        )

    def _remember_path_map(self, options: Any) -> None:
        ours = options.get(protocol.EXPERIMENTAL_KEY) if isinstance(options, dict) else None
        given = ours.get("pathMap") if isinstance(ours, dict) else None
        if not given:
            return
        try:
            self.path_map = self.path_map.merged(PathMap.parse(given))
        except (PathMapError, TypeError) as exc:
            log.error("initializationOptions.autocode.pathMap is not usable: %s", exc)
            self.show(f"AutoCode: the path map from the editor is not usable: {exc}", types.MessageType.Error)
            return
        log.info("path map for this session: %s", self.path_map.describe())

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
        self.in_loop(self.protocol.notify, method, self.path_map.outbound(payload))

    def log_to_client(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.in_loop(
            self.window_log_message,
            types.LogMessageParams(type=kind, message=self.path_map.text_to_client(message)),
        )

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.in_loop(
            self.window_show_message,
            types.ShowMessageParams(type=kind, message=self.path_map.text_to_client(message)),
        )

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
        if source is FeatureRequestError:
            return  # the error already went back to the client as the request's response
        # A broken message must never end the session; log it instead of a popup storm.
        log.error("error while handling a message: %s", error)


def fallback_name(connection: str) -> str:
    """A name for a client that sent no `clientInfo` (eglot 1.9 does not): the program at the
    other end of stdio (`emacs over stdio`), else the connection (`tcp 127.0.0.1:41234`)."""
    if connection != "stdio":
        return f"{connection} client"
    try:
        with open(f"/proc/{os.getppid()}/comm", encoding="utf-8") as f:  # Linux; elsewhere the generic name
            program = f.read().strip()
    except OSError:
        program = ""
    return f"{program} over stdio" if program else "a stdio client"


@functools.cache
def _shared_converter() -> Any:
    """pygls' message converter, built once per process: a listener's sessions share it, so a new
    connection does not pay the 20-50 ms of building its hooks again."""
    # lazy: built on the first session, not when the module loads
    from pygls.protocol import default_converter

    return default_converter()  # type: ignore[no-untyped-call]


def _quiet_when_cancelled(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A client that vanishes mid-command cancels its requests' tasks; pygls' done-callbacks then
    re-raise the cancellation. That is expected, not an error worth a traceback in the log."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        log.debug("a request was cancelled as its connection closed: %s", context.get("message"))
        return
    loop.default_exception_handler(context)


def close_memory_services() -> None:
    """Close the process's memory stores, if any memory command opened one (no import otherwise)."""
    module = warmup.loaded("autocode.memory.pool")
    if module is not None:
        module.close_all()


def available_features() -> list[str]:
    """Features whose engine part is installed (cheap: no engine import)."""
    modules = {
        "doctor": "autocode.doctor",
        "forget": "autocode.record",
        "trust": "autocode.settings",
        "prep": "autocode.prep",
        "tasks": "autocode.tasks",
        "memory": "autocode.memory",
        "actions": "autocode.tasks",
        "verify": "autocode.proof",
        "session": "autocode.settings",
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


REQUEST_FAILED_CODE = protocol.REQUEST_FAILED


SESSION: contextvars.ContextVar[AutoCodeServer | None] = contextvars.ContextVar("autocode_session", default=None)
"""The session whose message is being handled (set by the transport for each connection; the
tasks and engine threads a message starts inherit it)."""


class ClientLogHandler(logging.Handler):
    """Forwards our own log records to the client as `window/logMessage`, scrubbed as the log
    file is. A network listener serves several people's sessions in one process: each hears only
    the records of its own messages. Over stdio the one session also hears the rest (start-up,
    the warm-up thread)."""

    _by_server: ClassVar[dict[int, ClientLogHandler]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, server: AutoCodeServer) -> None:
        super().__init__(level=logging.getLogger("autocode_lsp").getEffectiveLevel())
        self.server = server
        self.setFormatter(ScrubbingFormatter("%(name)s: %(message)s"))

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
        session = SESSION.get()
        if session is not self.server and (session is not None or self.server.access.network):
            return
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
