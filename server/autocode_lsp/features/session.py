"""`autocode.session.configure` and `autocode.provider.check`: the model settings an editor holds
for its person (provider, model, base URL, engine) and the provider's key.

The settings become the flag layer of every task this session starts and of its doctor and
provider check, as `autocode task start --provider … --model …` would give them. The key is
kept in this process's memory only: it is put in the environment variable the provider reads
(the engine reads keys from the environment by name), never written to a file, added to the
log scrubber's literals before anything could log it, and never sent back. The sandbox passes
tests and agent commands only the variables it allows, so the key stays with the server.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import engine_call
from autocode_lsp.logscrub import ScrubbingFormatter

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer

STATE_KEY = "session_model"
"""`server.state` key of this session's `SessionModel` (read by features.tasks and features.project)."""

USUAL_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
}

_GIVEN = ("provider", "model", "base_url", "engine")

KEY_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]{0,62}_(?:KEY|TOKEN)")
"""The names a key may be put under: a key's own kind of variable, never PATH, HOME, LD_PRELOAD or
another variable the server's own programs read for something else."""


@dataclass
class SessionModel:
    """What the editor gave: setting values (snake_case names) and the key's variable."""

    flags: dict[str, str] = field(default_factory=dict)
    key_env: str | None = None
    key_set: bool = False


def session_model(server: AutoCodeServer) -> SessionModel:
    found = server.state.get(STATE_KEY)
    if not isinstance(found, SessionModel):
        found = server.state[STATE_KEY] = SessionModel()
    return found


def session_flags(server: AutoCodeServer) -> dict[str, str]:
    """The flag layer this session's tasks and checks get (the key's variable included)."""
    model = session_model(server)
    flags = dict(model.flags)
    if model.key_set and model.key_env:
        flags.setdefault("api_key_env", model.key_env)
    return flags


def task_options(server: AutoCodeServer) -> dict[str, Any]:
    """The session's flags that `TaskOptions` takes (an engine without an `engine` option ignores it)."""
    # lazy: not needed by the server's start
    from autocode.tasks import TaskOptions

    known = {f.name for f in dataclasses.fields(TaskOptions)}
    return {k: v for k, v in session_flags(server).items() if k in known}


def _known_settings() -> frozenset[str]:
    # lazy: not needed by the server's start
    from autocode.settings import SETTING_NAMES

    return frozenset(SETTING_NAMES)


def _refuse_key_over_network(server: AutoCodeServer) -> None:
    if server.access.network and not server.access.allow_client_overrides:
        message = (
            f"{protocol.SESSION_CONFIGURE}: apiKey would be sent by this server to an endpoint as its "
            "user, and this server was started without --allow-client-overrides; set the key variable "
            "in the server's own environment instead"
        )
        raise JsonRpcException(
            message=message, code=protocol.INVALID_PARAMS,
            data={"kind": "clientOverrideRefused", "message": message, "field": "apiKey"},
        )


def _check_key_variable(variable: str) -> None:
    if KEY_VARIABLE.fullmatch(variable):
        return
    message = (
        f"{protocol.SESSION_CONFIGURE}: apiKeyEnv {variable!r} is not a key's variable; name one in "
        "capitals that ends in _KEY or _TOKEN (OPENAI_API_KEY, ANTHROPIC_API_KEY, …), or leave it empty "
        "for the provider's usual one"
    )
    raise JsonRpcException(
        message=message, code=protocol.INVALID_PARAMS,
        data={"kind": "invalidArguments", "message": message, "field": "apiKeyEnv"},
    )


@command(protocol.SESSION_CONFIGURE)
async def configure(server: AutoCodeServer, args: protocol.SessionConfigureArgs) -> protocol.SessionSettings:
    if args.api_key:
        # First of all, so no log line can carry it from here on.
        ScrubbingFormatter.literals.add(args.api_key)
        _refuse_key_over_network(server)
    model = session_model(server)
    known = _known_settings()
    given = {name: getattr(args, name) for name in _GIVEN}
    model.flags = {k: v.strip() for k, v in given.items() if isinstance(v, str) and v.strip() and k in known}
    ignored = sorted(k for k, v in given.items() if isinstance(v, str) and v.strip() and k not in known)
    if args.api_key is not None:
        variable = args.api_key_env or USUAL_KEY_VARIABLES.get(model.flags.get("provider", ""), "OPENAI_API_KEY")
        _check_key_variable(variable)
        if model.key_env and model.key_env != variable:
            os.environ.pop(model.key_env, None)
        if args.api_key:
            os.environ[variable] = args.api_key
            model.key_env, model.key_set = variable, True
        else:
            os.environ.pop(variable, None)
            model.key_env, model.key_set = None, False
    return protocol.SessionSettings(
        settings={protocol.camel(k): v for k, v in model.flags.items()},
        ignored=[protocol.camel(k) for k in ignored],
        api_key_env=model.key_env,
        api_key_set=model.key_set,
    )


def _check(workspace: Path, flags: dict[str, str]) -> tuple[dict[str, Any], str]:
    # lazy: the check's HTTP client is not needed by the server's start
    from autocode.providers.agent.probe import check_workspace_provider, render

    found = check_workspace_provider(workspace, flags=flags or None)
    return found, "\n".join(render(found))


@command(protocol.PROVIDER_CHECK)
async def check(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> protocol.ProviderCheck:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.PROVIDER_CHECK)
    found, text = await engine_call(_check, workspace, session_flags(server))
    server.log_to_client(text)
    return protocol.ProviderCheck(check=found, text=text)
