"""`autocode doctor --check-provider`: one tiny request to the implementer's endpoint, and what it showed.

The request is the implementer's, shaped as a task would shape it (family,
temperature, streaming), offering one small tool and asking the model to
call it. The report names the endpoint (without any credentials in the
URL), the model, the family guessed, whether the key variable is set (never
its value), whether the endpoint took the tools (and the model called one),
what it refused and how long it took. Providers without an endpoint (the
fixture) say so and send nothing.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autocode.errors import UsageError
from autocode.providers import LOOP_SETTINGS, ProviderConfig, provider_for
from autocode.providers.agent.http import ToolsRefused
from autocode.providers.agent.reply import turn_of
from autocode.providers.base import ProviderError

PING = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Confirm that tool calls work.",
        "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    },
}
ASK = "This is a connection check. Call the ping tool with ok set to true."


def check_provider(values: Mapping[str, Any]) -> dict[str, Any]:
    """The check's findings as plain data; `values` are the resolved settings."""
    config = ProviderConfig.from_dict(
        {
            "provider": values.get("provider") or "fixture",
            "model": values.get("model"),
            "base_url": values.get("base_url"),
            "api_key_env": values.get("api_key_env"),
            "routes": values.get("routes") or {},
            **{name: values[name] for name in LOOP_SETTINGS if values.get(name) is not None},
        }
    )
    name, model = config.route("implementer")
    key_env = config.api_key_env
    out: dict[str, Any] = {
        "provider": name,
        "model": model,
        "endpoint": _shown(config.base_url),
        "api_key_env": key_env,
        "api_key_set": bool(key_env and os.environ.get(key_env)),
    }
    if name not in ("openai", "azure", "anthropic"):
        out["result"] = f"the {name} provider has no endpoint to check"
        return out
    try:
        provider: Any = provider_for(config, "implementer")
    except (UsageError, ProviderError) as exc:
        out.update(result="not configured", error=exc.message)
        return out
    # The variable the provider reads, its default included (anthropic's ANTHROPIC_API_KEY).
    key_env = provider.client.api_key_env
    out.update(api_key_env=key_env, api_key_set=bool(key_env and os.environ.get(key_env)))
    out["family"] = provider.shape.family.name
    notes: list[str] = []
    body = provider.shape.body(str(model), [{"role": "user", "content": ASK}], tools=[PING])
    started = time.monotonic()
    try:
        reply = provider.client.chat(body, notice=notes.append)
    except ToolsRefused as exc:
        out.update(result="answered", tools="refused", error=exc.message)
    except ProviderError as exc:
        out.update(result="failed", error=exc.message)
    else:
        turn = turn_of(reply, provider.base_url, tools_offered=True)
        called = any((c.get("function") or {}).get("name") == "ping" for c in turn.tool_calls)
        out.update(
            result="answered",
            tools="called" if called and not turn.calls_from_text else "written as text" if called else "not called",
            reply=" ".join(turn.content.split())[:200],
            finish_reason=turn.finish_reason,
            usage=turn.usage,
        )
    out["seconds"] = round(time.monotonic() - started, 3)
    out["adjusted"] = notes
    return out


def render(data: Mapping[str, Any]) -> list[str]:
    key = data.get("api_key_env")
    lines = [
        "provider check:",
        f"  endpoint       {data.get('endpoint') or '(unset)'} ({data.get('provider')}, family {data.get('family', '-')})",
        f"  model          {data.get('model') or '(unset)'}",
        f"  key variable   {key + (' is set' if data.get('api_key_set') else ' is NOT set') if key else '(none: no key is sent)'}",
        f"  result         {data.get('result')}" + (f" in {data['seconds']} s" if "seconds" in data else ""),
    ]
    if data.get("tools"):
        lines.append(f"  tools          {data['tools']}")
    for note in data.get("adjusted") or []:
        lines.append(f"  adjusted       {note}")
    if data.get("error"):
        lines.append(f"  error          {data['error']}")
    return lines


def _shown(url: str | None) -> str | None:
    """The URL without user information (a password in a URL never reaches a report)."""
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


CHECKED_SETTINGS = (
    "provider", "model", "base_url", "api_key_env", "routes", "max_turns", "token_budget", "time_budget",
    "edit_format", "api_version", "deployment", "request_timeout", "endpoint_family", "temperature",
    "response_format", "max_output_tokens", "context_window", "stream",
)
"""The settings the check reads (the implementer's endpoint and how a task would call it)."""


def check_workspace_provider(
    workspace: Path | str, flags: Mapping[str, Any] | None = None, package: Path | str | None = None
) -> dict[str, Any]:
    """`check_provider` with the settings of `workspace` (`flags` over them), resolved here."""
    # lazy: the settings are resolved only when a check is asked for
    from autocode.settings import resolve_settings

    snapshot = resolve_settings(workspace, flags=dict(flags) if flags else None, package=package)
    return check_provider({name: snapshot.value(name) for name in CHECKED_SETTINGS})
