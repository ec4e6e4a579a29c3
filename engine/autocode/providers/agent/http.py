"""The engine's one HTTP client for JSON APIs: chat completions and embeddings (`memory.embeddings`).

`ChatClient.post` sends a JSON body and returns the parsed JSON answer;
`ChatClient.chat` sends a chat request, streamed (server-sent events, see
`stream`) when the body asks for it, and returns the completion. Both:

- keep one HTTP connection per endpoint open between requests (a small
  process-wide pool; a kept connection the server closed meanwhile is
  replaced at once, not counted as a failure);
- time out on silence, not on length: `timeout` (the request_timeout
  setting) is the longest the endpoint may send nothing, so a reply that
  streams for minutes is fine and a server that stalls is not;
- retry connection resets, HTTP 429, 500, 502, 503, 504 and 529, and an
  error of a passing kind reported mid-stream (an overload), with
  exponential backoff and jitter (a `Retry-After` header wins), never past
  the `deadline` the caller's time budget sets;
- tell any other error as the endpoint told it (`endpoint_errors`).

`chat` also adapts to what the model takes: a 400 that names a parameter of
the request (temperature, response_format, max_tokens, ...) makes it drop or
rename that parameter, say so through `notice`, remember it for the process
and send again once.

A `cancelled` callable is polled while a request is in flight: when it turns
true the socket is shut down, the blocked read fails at once and
`RequestCancelled` is raised. The API key is read from the environment when
a request is made and is never stored, logged or put in a message.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from autocode.providers.agent.connections import POLL, POOL, watcher
from autocode.providers.agent.endpoint_errors import (
    RETRY_STATUSES,
    ContextTooLong,
    EndpointError,
    ParamRefused,
    ToolsRefused,
    classify,
)
from autocode.providers.agent.stream import Assembly, Progress, StreamFailed, arm, read_answer
from autocode.providers.base import ProviderError

__all__ = [
    "ChatClient",
    "ContextTooLong",
    "EndpointError",
    "OutOfTime",
    "ParamRefused",
    "RequestCancelled",
    "ToolsRefused",
]

MAX_RETRY_AFTER = 30.0



class RequestCancelled(ProviderError):
    """The task was cancelled while a request was in flight; the request was aborted."""

    kind = "cancelled"


class OutOfTime(ProviderError):
    """The caller's deadline (its time budget) passed while a request was in flight or waiting to retry."""


class _Dropped(Exception):
    """The connection broke (reset, closed mid-answer): worth sending again."""

    def __init__(self, reason: str, before_answer: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.before_answer = before_answer


# What each endpoint (base URL and model) turned out not to take: parameter -> its new name, or None (dropped).
_ADJUSTMENTS: dict[tuple[str, str], dict[str, str | None]] = {}
_ADJUST_LOCK = threading.Lock()


class ChatClient:
    """An OpenAI-compatible endpoint. A subclass speaking another chat API (`messages`) changes
    the path, the headers, `wire`/`unwire` (the body out, the answer back) and the stream's assembly."""

    chat_path = "/chat/completions"

    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        azure_api_version: str | None = None,
        azure_deployment: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._jitter = jitter
        self.azure_api_version = azure_api_version
        self.azure_deployment = azure_deployment
        self._proxies: dict[str, str] | None = None  # read from the environment once

    # -- addressing -------------------------------------------------------

    def url(self, path: str) -> str:
        """The full address of `path`; Azure puts the deployment in the path and api-version in the query."""
        if self.azure_api_version:
            query = urllib.parse.urlencode({"api-version": self.azure_api_version})
            base = self.base_url
            if self.azure_deployment and "/deployments/" not in base:
                base += f"/openai/deployments/{urllib.parse.quote(self.azure_deployment, safe='')}"
            return f"{base}{path}?{query}"
        return self.base_url + path

    def headers(self, streaming: bool = False) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if streaming else "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ProviderError(
                    f"the environment variable {self.api_key_env} (setting 'api_key_env') is not set; "
                    "export your API key there"
                )
            if self.azure_api_version:
                headers["api-key"] = key
            else:
                headers["Authorization"] = "Bearer " + key
        return headers

    # -- requests ---------------------------------------------------------

    def post(
        self, path: str, body: dict[str, Any], *, cancelled: Callable[[], bool] | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """POST a JSON body, return the JSON object answered (retried as the module says)."""
        return self._request(path, body, cancelled, deadline, None)

    def look(self, path: str, *, at_root: bool = False, timeout: float = 5.0) -> dict[str, Any] | None:
        """GET `path` (under base_url, or at the server's root) once, without retries and with a
        short timeout, for what a server tells about itself; None on any failure."""
        base = urllib.parse.urlsplit(self.base_url)
        url = f"{base.scheme}://{base.netloc}{path}" if at_root else self.base_url + path
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        if self._proxies is None:
            self._proxies = urllib.request.getproxies()
        key, conn, _ = POOL.get(parts, timeout, self._proxies, False)
        keep = False
        try:
            arm(conn, min(timeout, self.timeout), None)
            conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=self.headers())
            response = conn.getresponse()
            raw = response.read()
            keep = not response.will_close
            data = json.loads(raw.decode("utf-8")) if response.status == 200 else None
            return data if isinstance(data, dict) else None
        except (OSError, http.client.HTTPException, ValueError, ProviderError):
            return None
        finally:
            POOL.done(key, conn, keep)

    def chat(
        self,
        body: dict[str, Any],
        *,
        cancelled: Callable[[], bool] | None = None,
        deadline: float | None = None,
        progress: Progress | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """One chat completion (streamed when the body asks), adapting to the parameters the model refuses."""
        key = (self.base_url, str(body.get("model") or ""))
        tried: set[str] = set()
        while True:
            sent = self.adjusted(body)
            try:
                return self.unwire(self._request(self.chat_path, self.wire(sent), cancelled, deadline, progress))
            except ParamRefused as exc:
                param = str(exc.param)
                if param in tried:
                    raise
                tried.add(param)
                change = _replacement(param, exc.text, sent)
                with _ADJUST_LOCK:
                    _ADJUSTMENTS.setdefault(key, {})[param] = change
                    if param == "stream":
                        _ADJUSTMENTS[key]["stream_options"] = None
                what = f"sending '{change}' instead" if change else "leaving it out from now on"
                if notice is not None:
                    notice(f"the endpoint refused '{param}' ({exc.text}); {what}")

    def wire(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request body as this API takes it (a chat-completions body here)."""
        return body

    def unwire(self, reply: dict[str, Any]) -> dict[str, Any]:
        """The answer as a chat completion (it is one here)."""
        return reply

    def assembly(self) -> Assembly:
        """An empty assembly for a streamed answer."""
        return Assembly()

    def adjusted(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with what this endpoint and model turned out not to take dropped or renamed."""
        with _ADJUST_LOCK:
            changes = dict(_ADJUSTMENTS.get((self.base_url, str(body.get("model") or "")), {}))
        if not changes:
            return body
        out = dict(body)
        for param, new in changes.items():
            if param in out:
                value = out.pop(param)
                if new is not None and new not in out:
                    out[new] = value
        return out

    def _request(
        self, path: str, body: dict[str, Any], cancelled: Callable[[], bool] | None,
        deadline: float | None, progress: Progress | None,
    ) -> dict[str, Any]:
        data = json.dumps(body).encode("utf-8")
        url = self.url(path)
        shown = url.split("?", 1)[0]
        streaming = bool(body.get("stream"))
        attempt = 0
        while True:
            if cancelled is not None and cancelled():
                raise RequestCancelled("the task was cancelled before the request was sent")
            try:
                status, headers, raw, parsed = self._once(url, shown, data, cancelled, deadline, streaming, progress)
            except _Dropped as exc:
                if attempt < self.retries:
                    self._wait(_delay(self.backoff, attempt, None, self._jitter), cancelled, deadline,
                               f"{shown} closed the connection ({exc.reason})")
                    attempt += 1
                    continue
                raise ProviderError(
                    f"{shown} closed the connection ({exc.reason}) {attempt + 1} time(s) in a row; check the server"
                ) from None
            except StreamFailed as exc:
                if not exc.passing:
                    raise
                if attempt < self.retries:
                    self._wait(_delay(self.backoff, attempt, None, self._jitter), cancelled, deadline, exc.message)
                    attempt += 1
                    continue
                raise ProviderError(f"{exc.message} after {attempt + 1} attempts; try again later") from None
            if status in RETRY_STATUSES and attempt < self.retries:
                error = classify(shown, status, raw, body, attempt + 1)
                self._wait(_delay(self.backoff, attempt, headers.get("retry-after"), self._jitter), cancelled, deadline,
                           error.message)
                attempt += 1
                continue
            if status >= 300:
                raise classify(shown, status, raw, body, attempt + 1)
            if parsed is None:
                try:
                    parsed = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as exc:
                    raise ProviderError(
                        f"{shown} answered with a body that is not JSON; check that base_url is an "
                        "OpenAI-compatible API"
                    ) from exc
            if not isinstance(parsed, dict):
                raise ProviderError(f"{shown} answered with JSON that is not an object")
            return parsed

    def _wait(self, seconds: float, cancelled: Callable[[], bool] | None, deadline: float | None, why: str) -> None:
        if deadline is not None and time.monotonic() + seconds > deadline:
            raise OutOfTime(f"{why}; the time budget ends before the next attempt")
        if cancelled is None or self._sleep is not time.sleep:
            self._sleep(seconds)
            return
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cancelled():
                raise RequestCancelled("the task was cancelled while waiting to retry")
            time.sleep(min(POLL * 4, max(0.0, end - time.monotonic())))

    def _once(
        self, url: str, shown: str, data: bytes, cancelled: Callable[[], bool] | None,
        deadline: float | None, streaming: bool, progress: Progress | None,
    ) -> tuple[int, dict[str, str], bytes, Any]:
        """(status, headers, raw body, parsed answer or None) of one exchange on a pooled connection."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProviderError(f"base_url {shown} is not an http(s) address; check base_url")
        if self._proxies is None:
            self._proxies = urllib.request.getproxies()
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = self.headers(streaming)
        for fresh in (False, True):
            key, conn, reused = POOL.get(parts, self.timeout, self._proxies, fresh)
            aborted = threading.Event()
            if cancelled is not None:
                watcher().watch(conn, cancelled, aborted)
            started = time.monotonic()
            answered = False
            keep = False
            try:
                arm(conn, self.timeout, deadline)
                conn.request("POST", target, body=data, headers=headers)
                response = conn.getresponse()
                answered = True
                reply = read_answer(response, conn, shown, self.timeout, deadline, streaming, progress, started, self.assembly)
                keep = not response.will_close
                return reply
            except TimeoutError as exc:
                if aborted.is_set():
                    raise RequestCancelled("the task was cancelled; the request in flight was aborted") from exc
                if deadline is not None and time.monotonic() >= deadline - 0.01:
                    raise OutOfTime(f"{shown} was still answering when the time budget ran out") from exc
                where = "in the middle of its answer" if answered else "after the request"
                raise ProviderError(
                    f"{shown} sent nothing for {self.timeout:g} s {where} (request_timeout = {self.timeout:g}); "
                    "raise request_timeout or check the server"
                ) from exc
            except (OSError, http.client.HTTPException) as exc:
                if aborted.is_set():
                    raise RequestCancelled("the task was cancelled; the request in flight was aborted") from exc
                reason = getattr(exc, "strerror", None) or type(exc).__name__
                if isinstance(exc, ConnectionRefusedError | socket.gaierror):
                    raise ProviderError(f"cannot reach {shown}: {reason}; check base_url and that the server runs") from exc
                if reused and not answered and not fresh:
                    continue  # the server closed the kept connection meanwhile: a new one, at once
                raise _Dropped(reason, not answered) from exc
            finally:
                if cancelled is not None:
                    watcher().unwatch(conn)
                POOL.done(key, conn, keep and not aborted.is_set())
        raise AssertionError("unreachable")


def _replacement(param: str, text: str, sent: dict[str, Any]) -> str | None:
    """The name to send a refused parameter under instead, or None to leave it out."""
    if param == "max_tokens" and "max_completion_tokens" in text and "max_completion_tokens" not in sent:
        return "max_completion_tokens"
    if param == "max_completion_tokens" and "max_tokens" not in sent:
        return "max_tokens"
    return None


def _delay(backoff: float, attempt: int, retry_after: str | None, jitter: Callable[[], float]) -> float:
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER)
        except ValueError:
            pass
    # Exponential, spread over half to one and a half times the step so that clients
    # turned away together do not come back together.
    return float(backoff * (2**attempt) * (0.5 + jitter()))
