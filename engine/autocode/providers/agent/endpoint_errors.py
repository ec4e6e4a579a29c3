"""What an endpoint's error answer means, read from its status and its own message.

An error is told as the endpoint told it: the status and the server's
message go into the task's error. A few answers mean something the client
can act on, and only a clear statement counts:

- `ParamRefused`: a 400 naming a request parameter the model does not take
  (`param` in OpenAI's error object, or the name quoted in the message);
- `ToolsRefused`: a 400 that refuses the `tools` parameter itself ("does not
  support tools", vLLM's `--enable-auto-tool-choice`, llama.cpp's `--jinja`),
  never any 400 that merely mentions tools;
- `ContextTooLong`: the prompt is over the model's window
  (`context_length_exceeded`, "maximum context length is N tokens", ...).
"""

from __future__ import annotations

import json
import re
from typing import Any

from autocode.providers.base import ProviderError

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})  # 529: Anthropic "overloaded"

# Parameters the client may drop (or rename) when the endpoint names them as unsupported.
DROPPABLE = ("temperature", "response_format", "max_tokens", "max_completion_tokens", "stream_options", "stream")

_TOOLS_REFUSAL = re.compile(
    r"(does not|doesn't|do not|cannot) support (tools|tool[ _-]?(calls?|calling|use)|function[ _-]?calling|functions)"
    r"|\b(tools?|tool[ _-]?(calls?|calling|use)|function[ _-]?calling)\b[^.]{0,20}\b(is|are) not supported"
    r"|unsupported parameter:?\s*'?(tools|tool_choice)\b"
    r"|--enable-auto-tool-choice|tools param requires --jinja|tools are not (supported|available)",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|exceeds? the (available )?context"
    r"|prompt is too long|too many tokens|exceed_context_size|input is too long|reduce the length of the (messages|prompt)",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"(?:maximum context length is|context (?:size|window|length)(?: is| of)?|n_ctx[ =:]*)\s*(\d{3,9})"
    r"|tokens? > (\d{3,9}) maximum",  # Anthropic: "prompt is too long: 9000 tokens > 8192 maximum"
    re.IGNORECASE,
)
_UNSUPPORTED = re.compile(r"unsupported|not support|not supported|does not accept|unknown|unrecognized|invalid|must be|only the default", re.IGNORECASE)


class EndpointError(ProviderError):
    """The endpoint answered with an error status; `text` is its own message."""

    def __init__(self, message: str, *, status: int, text: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.text = text
        self.param = param
        self.code = code


class ToolsRefused(EndpointError):
    """The endpoint refused the tools parameter: this model or server takes no tool calls."""


class ParamRefused(EndpointError):
    """The endpoint refused one request parameter (named in `param`)."""


class ContextTooLong(EndpointError):
    """The request is over the model's context window; `limit` is the window when the endpoint said it."""

    limit: int | None = None


def error_details(raw: bytes) -> tuple[str, str | None, str | None]:
    """(message, param, code) from an error body: OpenAI's {"error": {...}}, a bare string, or text."""
    try:
        data: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return " ".join(raw.decode("utf-8", "replace").split())[:500], None, None
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or err.get("msg") or json.dumps(err)
        param, code = err.get("param"), err.get("code") or err.get("type")
        return str(message)[:500], str(param) if param else None, str(code) if code else None
    if isinstance(err, str):
        return err[:500], None, None
    if isinstance(data, dict) and isinstance(data.get("detail"), str):  # FastAPI-style servers
        return str(data["detail"])[:500], None, None
    return json.dumps(data)[:500], None, None


def classify(shown: str, status: int, raw: bytes, sent: dict[str, Any] | None, attempts: int) -> EndpointError:
    """The error to raise for an error answer of `shown`, given the body that was sent."""
    text, param, code = error_details(raw)
    told = f"HTTP {status}: {text}" if text else f"HTTP {status}"
    said = f"{shown} answered {told}"
    if status in RETRY_STATUSES:
        return EndpointError(
            f"{shown} kept failing ({told}) after {attempts} attempt{'s' if attempts > 1 else ''}; try again later",
            status=status, text=text, param=param, code=code,
        )
    if status in (401, 403):
        return EndpointError(
            f"{said}; check the API key in the variable named by api_key_env", status=status, text=text, code=code
        )
    if status == 404:
        return EndpointError(f"{said}; check base_url and model", status=status, text=text, code=code)
    if status in (400, 413, 422):
        if _CONTEXT.search(text) or (code or "") in ("context_length_exceeded", "exceed_context_size_error"):
            err = ContextTooLong(
                f"{said}; the conversation is over the model's context window: set context_window "
                "to the model's window, or use a model with a larger one",
                status=status, text=text, param=param, code=code,
            )
            found = _LIMIT.search(text)
            err.limit = int(found.group(1) or found.group(2)) if found else None
            return err
        if _TOOLS_REFUSAL.search(text) or (param in ("tools", "tool_choice") and _UNSUPPORTED.search(text)):
            return ToolsRefused(f"{shown} refused the tools (HTTP {status}): {text}", status=status, text=text, param=param, code=code)
        named = refused_param(text, param, sent)
        if named is not None:
            return ParamRefused(
                f"{said}; the model does not take '{named}'", status=status, text=text, param=named, code=code
            )
    return EndpointError(said, status=status, text=text, param=param, code=code)


def refused_param(text: str, param: str | None, sent: dict[str, Any] | None) -> str | None:
    """The droppable parameter a 400 refuses, when the request carried it and the message says so."""
    if not sent:
        return None
    carried = [p for p in DROPPABLE if p in sent]
    if param:
        top = param.split(".", 1)[0].split("[", 1)[0]
        if top in carried:
            return top
    if not _UNSUPPORTED.search(text):
        return None
    lowered = text.lower()
    # Longest names first: "max_completion_tokens" before "max_tokens", "stream_options" before "stream".
    for name in sorted(carried, key=len, reverse=True):
        if re.search(rf"(?<![a-z_]){re.escape(name)}(?![a-z_])", lowered):
            return name
    return None
