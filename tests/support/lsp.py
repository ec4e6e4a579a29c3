"""Starting the real server over stdio, TCP or WebSocket and talking to it like an editor."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

PRESETS = {"neovim": "neovim", "vscode": "visual_studio_code"}
CLIENT_NAMES = {"neovim": "Neovim", "vscode": "Visual Studio Code"}
TRANSPORTS = ("stdio", "tcp", "ws", "socket")


ENTRIES = ("module", "script")
"""How a test starts the server: `python -m autocode_lsp` or the installed `autocode-lsp` script."""


def server_command(log_file: Path, *extra: str, entry: str = "module") -> list[str]:
    if entry == "script":
        script = Path(sys.executable).parent / "autocode-lsp"
        assert script.is_file(), f"the autocode-lsp entry point is not installed next to {sys.executable}"
        return [str(script), "--log-file", str(log_file), *extra]
    return [sys.executable, "-m", "autocode_lsp", "--log-file", str(log_file), *extra]


@dataclass
class Session:
    """One client connected to one server process, and what it received."""

    client: LanguageClient
    process: asyncio.subprocess.Process | None
    transport: str
    port: int | None = None
    token: str | None = None
    did_change: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    message_requests: list[types.ShowMessageRequestParams] = field(default_factory=list)
    answer_question: Callable[[dict[str, Any]], Any] | None = None
    review_plan: Callable[[dict[str, Any]], Any] | None = None
    choose: Callable[[types.ShowMessageRequestParams], str | None] | None = None
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    apply_edit: Callable[[types.ApplyWorkspaceEditParams], types.ApplyWorkspaceEditResult] | None = None
    """How the client answers workspace/applyEdit; default: like an editor with no file open,
    it applies the edit to the files (see `apply_to_disk`)."""
    saves: list[dict[str, Any]] = field(default_factory=list)
    save_documents: Callable[[dict[str, Any]], list[str]] | None = None
    """How the client answers autocode/task/saveDocuments (the URIs it saved); default: it saves none."""

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    async def command_error(self, name: str, *arguments: Any) -> JsonRpcException:
        try:
            result = await self.command(name, *arguments)
        except JsonRpcException as exc:
            return exc
        raise AssertionError(f"{name} succeeded with {result!r}; an error was expected")


def capabilities(
    preset: str,
    *,
    opt_in: bool | dict[str, Any],
    progress: bool | None = None,
    show_document: bool = True,
) -> types.ClientCapabilities:
    caps = client_capabilities(PRESETS[preset])
    if opt_in:
        # True: the whole opt-in; a dict: these keys on top of the protocol version.
        extra = opt_in if isinstance(opt_in, dict) else {}
        caps.experimental = {"autocode": {"protocolVersion": "1.0", **extra}}
    if progress is not None and caps.window is not None:
        caps.window.work_done_progress = progress
    if not show_document and caps.window is not None:
        caps.window.show_document = None
    return caps


TOKENS: dict[int, str | None] = {}
"""The token each listening server process printed the file of (by process id)."""


async def read_listening_line(process: asyncio.subprocess.Process, kind: str) -> tuple[str, Path | None]:
    """The address of a `listening on` line and its token file (None for --no-token)."""
    assert process.stderr is not None
    while True:
        line = await asyncio.wait_for(process.stderr.readline(), timeout=30)
        if not line:
            raise RuntimeError(f"the server exited before listening (code {process.returncode})")
        match = re.search(rf"listening on {kind} (\S+) \((?:token file: (.+)|no token)\)", line.decode())
        if match:
            token_file = Path(match.group(2)) if match.group(2) else None
            return match.group(1), token_file


SOCKETS: dict[int, Path] = {}
"""The unix socket each `--socket` server process listens on (by process id)."""


async def _read_port(process: asyncio.subprocess.Process, kind: str) -> int | None:
    address, token_file = await read_listening_line(process, kind)
    TOKENS[process.pid] = token_file.read_text(encoding="utf-8").strip() if token_file else None
    if kind == "socket":
        SOCKETS[process.pid] = Path(address)
        return None
    host, _, port = address.rpartition(":")
    assert host == "127.0.0.1", address
    return int(port)


async def start_socket(client: LanguageClient, path: Path) -> None:
    """pytest-lsp's `start_tcp`, over a unix-domain socket."""
    from pygls.io_ import run_async

    reader, writer = await asyncio.open_unix_connection(str(path))
    client.protocol.set_writer(writer)
    task = asyncio.create_task(
        run_async(
            stop_event=client._stop_event, reader=reader, protocol=client.protocol,
            error_handler=client.report_server_error,
        )
    )
    client._async_tasks.append(task)


async def start_ws_with_headers(client: LanguageClient, port: int, headers: dict[str, str]) -> None:
    """pygls' `start_ws` without a way to send headers; the token travels in one."""
    from pygls.io_ import run_websocket
    from websockets.asyncio.client import connect as ws_connect

    websocket = await ws_connect(f"ws://127.0.0.1:{port}", additional_headers=headers)
    task = asyncio.create_task(
        run_websocket(
            stop_event=client._stop_event, websocket=websocket, protocol=client.protocol,
            error_handler=client.report_server_error,
        )
    )
    client._async_tasks.append(task)
    await asyncio.sleep(0)


async def launch(
    transport: str,
    log_file: Path,
    env: dict[str, str] | None = None,
    *,
    entry: str = "module",
    address: str = "127.0.0.1:0",
    overrides: bool = True,
    extra: tuple[str, ...] = (),
) -> tuple[asyncio.subprocess.Process | None, int | None]:
    """Start a TCP/WebSocket/unix-socket server process (stdio servers are started by the client).

    `overrides`: the flow tests name their test command from the client, as over stdio, so
    they start the server with --allow-client-overrides; the security tests do not.
    """
    if transport == "stdio":
        return None, None
    if transport == "socket":
        folder = Path(tempfile.mkdtemp(prefix="autocode-sock-"))
        address = str(folder / "lsp.sock")
    flags = ("--allow-client-overrides",) if overrides else ()
    process = await asyncio.create_subprocess_exec(
        *server_command(log_file, f"--{transport}", address, *flags, *extra, entry=entry),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    port = await _read_port(process, transport)
    return process, port


async def connect(
    transport: str,
    *,
    log_file: Path,
    process: asyncio.subprocess.Process | None = None,
    port: int | None = None,
    env: dict[str, str] | None = None,
    entry: str = "module",
) -> Session:
    client = make_test_lsp_client()
    if transport == "stdio":
        # The script gets an explicit --stdio; the module relies on stdio being the default.
        extra = ("--stdio",) if entry == "script" else ()
        await client.start_io(*server_command(log_file, *extra, entry=entry), env=env)
        session = Session(client=client, process=client._server, transport=transport)
    elif transport == "tcp":
        assert port is not None and process is not None
        await client.start_tcp("127.0.0.1", port)
        session = Session(client=client, process=process, transport=transport, port=port,
                          token=TOKENS.get(process.pid))
    elif transport == "ws":
        assert port is not None and process is not None
        token = TOKENS.get(process.pid)
        await start_ws_with_headers(client, port, {"X-AutoCode-Token": token} if token else {})
        session = Session(client=client, process=process, transport=transport, port=port)
    elif transport == "socket":
        assert process is not None
        await start_socket(client, SOCKETS[process.pid])
        session = Session(client=client, process=process, transport=transport,
                          token=TOKENS.get(process.pid))
    else:
        raise ValueError(f"unknown transport {transport}")
    _register_handlers(session)
    return session


async def open_session(
    transport: str, log_file: Path, *, entry: str = "module", env: dict[str, str] | None = None
) -> Session:
    """Start a server on `transport` (a listener for TCP/WebSocket) and connect one client."""
    process, port = await launch(transport, log_file, env, entry=entry)
    return await connect(transport, log_file=log_file, process=process, port=port, env=env, entry=entry)


def _register_handlers(session: Session) -> None:
    client = session.client

    @client.feature("autocode/task/didChange")
    def did_change(ls: LanguageClient, params: Any) -> None:
        session.did_change.append(_plain(params))

    @client.feature("autocode/task/askQuestion")
    async def ask(ls: LanguageClient, params: Any) -> Any:
        data = _plain(params)
        session.questions.append(data)
        if session.answer_question is None:
            return {"answer": None}
        reply = session.answer_question(data)
        # A dict is the whole reply (e.g. with `how`); anything else is the answer's text.
        return reply if isinstance(reply, dict) else {"answer": reply}

    @client.feature("autocode/task/reviewPlan")
    async def review(ls: LanguageClient, params: Any) -> Any:
        data = _plain(params)
        session.reviews.append(data)
        if session.review_plan is None:
            return {"decision": "later"}
        return session.review_plan(data)

    @client.feature("autocode/task/saveDocuments")
    async def save_documents(ls: LanguageClient, params: Any) -> Any:
        data = _plain(params)
        session.saves.append(data)
        return {"saved": session.save_documents(data) if session.save_documents else []}

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        session.edits.append(params)
        return (session.apply_edit or apply_to_disk)(params)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def message_request(
        ls: LanguageClient, params: types.ShowMessageRequestParams
    ) -> types.MessageActionItem | None:
        session.message_requests.append(params)
        title = session.choose(params) if session.choose else None
        return types.MessageActionItem(title=title) if title is not None else None


def _offset(text: str, position: types.Position) -> int:
    lines = text.split("\n")
    if position.line >= len(lines):
        return len(text)
    before = sum(len(line) + 1 for line in lines[: position.line])
    units = lines[position.line].encode("utf-16-le")[: position.character * 2].decode("utf-16-le")
    return before + len(units)


def apply_to_disk(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
    """What an editor does with a WorkspaceEdit for files it has not open: change the files."""
    from pygls.uris import to_fs_path

    edit = params.edit

    def apply_text(uri: str, text_edits: list[Any]) -> None:
        path = Path(to_fs_path(uri) or "")
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        for e in sorted(text_edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
            start, end = _offset(text, e.range.start), _offset(text, e.range.end)
            text = text[:start] + e.new_text + text[end:]
        path.write_text(text, encoding="utf-8")

    for step in edit.document_changes or []:
        if isinstance(step, types.CreateFile):
            path = Path(to_fs_path(step.uri) or "")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        elif isinstance(step, types.DeleteFile):
            Path(to_fs_path(step.uri) or "").unlink(missing_ok=True)
        else:
            apply_text(step.text_document.uri, list(step.edits))
    for uri, text_edits in (edit.changes or {}).items():
        apply_text(uri, list(text_edits))
    return types.ApplyWorkspaceEditResult(applied=True)


def _plain(value: Any) -> Any:
    """Params of custom methods arrive as pygls' generic objects; make them plain data."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: _plain(v) for k, v in vars(value).items()}
    return value


async def initialize(
    session: Session,
    *,
    preset: str,
    folders: list[Path] | None,
    opt_in: bool | dict[str, Any] = False,
    progress: bool | None = None,
    show_document: bool = True,
) -> types.InitializeResult:
    params = types.InitializeParams(
        capabilities=capabilities(preset, opt_in=opt_in, progress=progress, show_document=show_document),
        client_info=types.ClientInfo(name=CLIENT_NAMES[preset], version="test"),
        workspace_folders=(
            [types.WorkspaceFolder(uri=p.as_uri(), name=p.name) for p in folders]
            if folders is not None else None
        ),
        root_uri=folders[0].as_uri() if folders else None,
        initialization_options={"autocode": {"token": session.token}} if session.token else None,
    )
    return await session.client.initialize_session(params)


async def close(session: Session, *, stop_process: bool = True) -> None:
    try:
        await asyncio.wait_for(session.client.shutdown_session(), timeout=20)
    finally:
        await session.client.stop()
        if stop_process and session.transport != "stdio" and session.process is not None:
            await stop(session.process)


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), timeout=10)
        except TimeoutError:
            process.kill()
            await process.wait()
    socket_path = SOCKETS.pop(process.pid, None)
    if socket_path is not None and socket_path.parent.name.startswith("autocode-sock-"):
        shutil.rmtree(socket_path.parent, ignore_errors=True)  # the folder `launch` made for it


async def wait_until(predicate: Callable[[], bool], *, timeout: float = 30, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.02)


def logged(session: Session, *parts: str) -> int:
    """How many of the server's log messages to this client (`window/logMessage`) hold every one
    of `parts`: the later message that proves the server acted, where acting shows nothing else."""
    return sum(all(p in m.message for p in parts) for m in session.client.log_messages)


def child_env() -> dict[str, str]:
    return dict(os.environ)
