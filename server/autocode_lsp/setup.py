"""A session's features wired onto it: commands, documents, and the hooks of its lifecycle.

`create_server` builds one `AutoCodeServer` (`server.py`) and registers on it every protocol
command (each handler loads from `features/` on first use) and the document features plain
clients use. The session object itself knows no feature: the features import it (for its
type), so it must not import them; this module is where both meet.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError

from autocode.extensions import load as load_extensions
from autocode_lsp import protocol, warmup
from autocode_lsp.advice import advise_error, advise_wire
from autocode_lsp.commands import handler_for as registered
from autocode_lsp.commands import names as command_names
from autocode_lsp.commands import spec_for
from autocode_lsp.errors import invalid_arguments
from autocode_lsp.security import STDIO, Access
from autocode_lsp.server import (
    AutoCodeServer,
    ClientLogHandler,
    Handler,
    available_features,
    close_memory_services,
    log,
)


def handler_for(name: str) -> Handler:
    """The handler of a command (`autocode_lsp.commands`: its module loads on first use)."""
    return registered(name)


def _command(server: AutoCodeServer, name: str) -> None:
    async def run(ls: AutoCodeServer, *arguments: Any) -> Any:
        started = time.perf_counter()
        warmup.settled(name)
        try:
            spec = spec_for(name)
            result = await _run_command(ls, spec, arguments)
        except JsonRpcException as exc:
            log.info("%s failed: %s", name, exc.message)
            advise_error(exc, ls.client_name)
            if ls.path_map and "pathMap" not in (exc.data or {}):
                exc.message = ls.path_map.text_to_client(exc.message)
                exc.data = ls.path_map.outbound(exc.data)
            raise
        except Exception as exc:
            log.exception("%s failed unexpectedly", name)
            raise JsonRpcInternalError(
                message=f"{name} failed unexpectedly: {exc}. The server log has the details."
            ) from exc
        finally:
            warmup.command_ended()
        log.debug("%s took %.1f ms", name, (time.perf_counter() - started) * 1000)
        _ask_again(ls)
        return ls.path_map.outbound(advise_wire(protocol.to_wire(result), ls.client_name))

    run.__name__ = name
    server.command(name)(run)


def _ask_again(server: AutoCodeServer) -> None:
    """The person just ran a command: prompts that went unanswered are asked again (tasks)."""
    if "tasks" in server.state:  # set once the tasks feature talked to this client
        # lazy: loaded already when the state exists
        from autocode_lsp.features import tasks

        tasks.ask_again(server)


COMMAND_NAMING_FIELDS = ("test_command", "base_url")
"""Arguments that name a program or an endpoint the server would use as this user."""


def _check_arguments(server: AutoCodeServer, command: str, args: Any) -> None:
    """Confinement: a `workspace` inside the session's folders; command-naming arguments
    from a network client only when the person allowed them."""
    # lazy: not needed by the server's `initialize`, which imports this module
    from autocode_lsp import workspaces

    workspace = getattr(args, "workspace", None)
    if isinstance(workspace, str):
        workspaces.confine(server, workspace, command=command)
    if server.access.network and not server.access.allow_client_overrides:
        for field in COMMAND_NAMING_FIELDS:
            if getattr(args, field, None) is not None:
                wire = protocol.camel(field)
                message = (
                    f"{command}: {wire} names a command the server would run as its user, and "
                    "this server was started without --allow-client-overrides; set it in the "
                    "project's settings instead"
                )
                raise JsonRpcException(
                    message=message, code=protocol.INVALID_PARAMS,
                    data={"kind": "clientOverrideRefused", "message": message, "field": wire},
                )


async def _run_command(ls: AutoCodeServer, spec: Any, arguments: tuple[Any, ...]) -> Any:
    handler = handler_for(spec.name)
    try:
        if _needs_task_id(spec, arguments):
            # lazy: not needed by the server's `initialize`, which imports this module
            from autocode_lsp.features.actions import fill_task

            raw = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
            if isinstance(raw.get("workspace"), str):
                # lazy: not needed by the server's `initialize`, which imports this module
                from autocode_lsp import workspaces

                workspaces.confine(ls, raw["workspace"], command=spec.name)  # before any task is read
            # The rest of the object must be right before the server goes looking.
            placeholder = {"taskId": "-", "revision": 0} if spec.name == protocol.TASK_APPROVE_PLAN else {"taskId": "-"}
            protocol.parse_arguments(spec, [{**placeholder, **raw}])
            arguments = (await fill_task(ls, spec.name, raw),)
        args = protocol.parse_arguments(spec, arguments)
    except protocol.InvalidArguments as exc:
        raise invalid_arguments(str(exc)) from exc
    _check_arguments(ls, spec.name, args)
    return await handler(ls, args)


def _needs_task_id(spec: Any, arguments: tuple[Any, ...]) -> bool:
    """A task command sent with no arguments (or an object without `taskId`)."""
    if not any(f.name == "task_id" for f in dataclasses.fields(spec.args)):
        return False
    if not arguments or arguments[0] is None:
        return True
    return isinstance(arguments[0], dict) and "taskId" not in arguments[0] and len(arguments) == 1


def create_server(
    *, end_connection: Callable[[], None] | None = None, access: Access = STDIO
) -> AutoCodeServer:
    """A server with every protocol command registered (handlers load on first use)."""
    server = AutoCodeServer(end_connection=end_connection, access=access)
    load_extensions()  # the modules AUTOCODE_EXTENSIONS names add their commands (and other entries)
    for name in command_names():
        _command(server, name)

    @server.feature(types.INITIALIZED)
    def initialized(ls: AutoCodeServer, params: types.InitializedParams) -> None:
        ClientLogHandler.attach(ls)
        _tasks_joined(ls, None)  # imports the tasks feature here: before the warm-up thread imports
        warmup.start()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: AutoCodeServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        # lazy: not needed by the server's `initialize`, which imports this module
        from autocode_lsp.workspaces import to_path

        added = []
        for folder in params.event.added:
            try:
                added.append(to_path(folder.uri, ls))
            except Exception:
                continue
        if added:
            _tasks_joined(ls, added)

    _documents(server)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: AutoCodeServer, params: Any) -> None:
        ClientLogHandler.detach(ls)
        if ls.end_connection is None:
            # stdio: the session is the process, so its memory stores close now.
            # TCP/WebSocket sessions share them; they close when the listener stops.
            close_memory_services()

    return server


def _tasks_joined(server: AutoCodeServer, folders: list[Any] | None) -> None:
    """Tell the tasks feature a session (or its new folders) arrived; waiting tasks are re-announced."""
    if "tasks" not in available_features():
        return
    try:
        # lazy: not needed by the server's `initialize`, which imports this module
        from autocode_lsp.features import tasks

        tasks.joined(server, folders)
    except Exception:
        log.exception("re-announcing waiting tasks failed")


def _documents(server: AutoCodeServer) -> None:
    """Code actions on any document, code lenses on AutoCode's own files, and saved forms: every
    task step for a client that knows nothing of AutoCode (features/actions.py)."""

    def actions() -> Any:
        return importlib.import_module("autocode_lsp.features.actions")

    async def plain_prompt(ls: AutoCodeServer, snap: dict[str, Any], question: Any) -> Any:
        return await actions().prompt(ls, snap, question)

    server.state["plain_prompt"] = plain_prompt  # features.tasks.PLAIN_PROMPT

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=["source.autocode"], resolve_provider=False),
    )
    async def code_action(ls: AutoCodeServer, params: types.CodeActionParams) -> Any:
        return await actions().code_action(ls, params)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: AutoCodeServer, params: types.CodeLensParams) -> Any:
        return await actions().code_lens(ls, params)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(ls: AutoCodeServer, params: types.DidSaveTextDocumentParams) -> None:
        await actions().did_save(ls, params)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: AutoCodeServer, params: types.DidOpenTextDocumentParams) -> None:
        await actions().did_open(ls, params)  # the server reads files from disk; this is for diagnostics

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier="autocode", inter_file_dependencies=False, workspace_diagnostics=True),
    )
    async def document_diagnostic(ls: AutoCodeServer, params: types.DocumentDiagnosticParams) -> Any:
        return await actions().document_diagnostic(ls, params)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(ls: AutoCodeServer, params: types.WorkspaceDiagnosticParams) -> Any:
        return await actions().workspace_diagnostic(ls, params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AutoCodeServer, params: types.DidCloseTextDocumentParams) -> None:
        return None

