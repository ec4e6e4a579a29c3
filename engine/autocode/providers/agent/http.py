"""The engine's one HTTP client for JSON APIs: chat completions and embeddings (`memory.embeddings`).

One request over http.client, abortable from another thread.

`ChatClient.post` sends a JSON body and returns the parsed JSON answer. 429
and 5xx answers are retried with exponential backoff (a `Retry-After` header
wins); a request that runs past the timeout is not retried and says so. A
`cancelled` callable is polled while the request is in flight: when it turns
true the socket is shut down, the blocked read fails at once and
`RequestCancelled` is raised. An HTTP 400 whose body names tools raises
`ToolsRefused`, so a caller can fall back to a text format.

The API key is read from the environment when a request is made and is never
stored, logged or put in a message.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from autocode.providers.base import ProviderError

POLL = 0.05


class RequestCancelled(ProviderError):
    """The task was cancelled while a request was in flight; the request was aborted."""

    kind = "cancelled"


class ToolsRefused(ProviderError):
    """The endpoint answered HTTP 400 naming tools: this model or server takes no tool calls."""


class ChatClient:
    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        azure_api_version: str | None = None,
        azure_deployment: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
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

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
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

    # -- the request ------------------------------------------------------

    def post(
        self, path: str, body: dict[str, Any], *, cancelled: Callable[[], bool] | None = None
    ) -> dict[str, Any]:
        data = json.dumps(body).encode("utf-8")
        url = self.url(path)
        shown = url.split("?", 1)[0]
        attempt = 0
        while True:
            if cancelled is not None and cancelled():
                raise RequestCancelled("the task was cancelled before the request was sent")
            status, headers, raw = self._once(url, shown, data, cancelled)
            if status == 429 or status >= 500:
                if attempt < self.retries:
                    self._wait(_delay(self.backoff, attempt, headers.get("retry-after")), cancelled)
                    attempt += 1
                    continue
                raise ProviderError(_status_message(shown, status, attempt))
            if status == 400 and b"tool" in raw.lower():
                raise ToolsRefused(f"{shown} refused the tools (HTTP 400): {_error_text(raw)}")
            if status >= 300:
                raise ProviderError(_status_message(shown, status, attempt))
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

    def _wait(self, seconds: float, cancelled: Callable[[], bool] | None) -> None:
        if cancelled is None or self._sleep is not time.sleep:
            self._sleep(seconds)
            return
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cancelled():
                raise RequestCancelled("the task was cancelled while waiting to retry")
            time.sleep(min(POLL * 4, max(0.0, end - time.monotonic())))

    def _once(
        self, url: str, shown: str, data: bytes, cancelled: Callable[[], bool] | None
    ) -> tuple[int, dict[str, str], bytes]:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProviderError(f"base_url {shown} is not an http(s) address; check base_url")
        if self._proxies is None:
            self._proxies = urllib.request.getproxies()
        conn = _connection(parts, self.timeout, self._proxies)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        aborted = threading.Event()
        if cancelled is not None:
            _watcher().watch(conn, cancelled, aborted)
        started = time.monotonic()
        try:
            conn.request("POST", target, body=data, headers=self.headers())
            response = conn.getresponse()
            raw = response.read()
            headers = {k.lower(): v for k, v in response.getheaders()}
            return response.status, headers, raw
        except TimeoutError as exc:
            if aborted.is_set():
                raise RequestCancelled("the task was cancelled; the request in flight was aborted") from exc
            raise ProviderError(
                f"{shown} did not answer within {self.timeout:g} s; raise the provider timeout or check the server"
            ) from exc
        except (OSError, http.client.HTTPException) as exc:
            if aborted.is_set():
                raise RequestCancelled("the task was cancelled; the request in flight was aborted") from exc
            if time.monotonic() - started >= self.timeout:
                raise ProviderError(
                    f"{shown} did not answer within {self.timeout:g} s; raise the provider timeout or check the server"
                ) from exc
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise ProviderError(f"cannot reach {shown}: {reason}; check base_url") from exc
        finally:
            if cancelled is not None:
                _watcher().unwatch(conn)
            conn.close()


def _connection(parts: urllib.parse.SplitResult, timeout: float, proxies: dict[str, str]) -> http.client.HTTPConnection:
    host = parts.hostname or ""
    port = parts.port
    proxy = proxies.get(parts.scheme)
    if proxy and urllib.request.proxy_bypass(host):
        proxy = None
    if parts.scheme == "https":
        if proxy:
            p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(p.hostname or "", p.port, timeout=timeout)
            conn.set_tunnel(host, port)
            return conn
        return http.client.HTTPSConnection(host, port, timeout=timeout)
    return http.client.HTTPConnection(host, port, timeout=timeout)


class _Watcher:
    """One daemon thread for the process that shuts the socket of a request in flight when its
    task asks to cancel. Started once: a thread per request would cost more than the rest of a turn.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._active: dict[int, tuple[http.client.HTTPConnection, Callable[[], bool], threading.Event]] = {}
        threading.Thread(target=self._run, daemon=True, name="autocode-http-cancel").start()

    def watch(self, conn: http.client.HTTPConnection, cancelled: Callable[[], bool], aborted: threading.Event) -> None:
        with self._lock:
            self._active[id(conn)] = (conn, cancelled, aborted)
            self._lock.notify()

    def unwatch(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._active.pop(id(conn), None)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._active:
                    self._lock.wait()
                watched = list(self._active.values())
            for conn, cancelled, aborted in watched:
                try:
                    stop = cancelled()
                except Exception:  # a broken cancel check never kills the watcher
                    stop = False
                if stop:
                    with self._lock:
                        if self._active.pop(id(conn), None) is None:
                            continue
                        aborted.set()
                        sock = conn.sock
                        if sock is not None:
                            with contextlib.suppress(OSError):
                                sock.shutdown(socket.SHUT_RDWR)
            time.sleep(POLL)


_WATCHER: _Watcher | None = None
_WATCHER_LOCK = threading.Lock()


def _watcher() -> _Watcher:
    global _WATCHER
    with _WATCHER_LOCK:
        if _WATCHER is None:
            _WATCHER = _Watcher()
        return _WATCHER


def _delay(backoff: float, attempt: int, retry_after: str | None) -> float:
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), 30.0)
        except ValueError:
            pass
    return float(backoff * (2**attempt))


def _status_message(url: str, status: int, attempt: int) -> str:
    if status in (401, 403):
        return f"{url} refused the request (HTTP {status}); check the API key variable named by api_key_env"
    if status == 429 or status >= 500:
        return f"{url} kept failing (HTTP {status}) after {attempt + 1} attempts; try again later"
    return f"{url} answered HTTP {status}; check base_url and model"


def _error_text(raw: bytes) -> str:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return raw.decode("utf-8", "replace")[:300]
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
    return json.dumps(data)[:300]
