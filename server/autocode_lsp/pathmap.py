"""Paths across a container boundary: the editor sees `/home/ana/app`, the server `/work/app`.

`--path-map CLIENT_PREFIX=SERVER_PREFIX` (repeatable) and `initializationOptions.autocode.pathMap`
(a list of the same strings, or an object `{client: server}`) say how the two sides name the
same folders. Every path or `file://` URI that comes in (workspace folders, `workspace`
arguments, documents) is turned into the server's name; every one that goes out (results,
notifications, messages, documents to open, edits, errors) into the client's. A path that comes
in outside every client prefix cannot be meant for this server and is an error naming both sides.

The editor may run on Windows: a client prefix may be `C:\\Users\\ana\\app`, `C:/Users/ana/app`
or a URI (`file:///c%3A/Users/ana/app`); drive letters and separators are compared loosely,
as Windows does. The server's side is always a POSIX path. URIs that go out are percent-encoded.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlparse


class PathMapError(ValueError):
    """A mapping that cannot be used, or a path outside it."""


_DRIVE = re.compile(r"^/?([A-Za-z]):(?:[\\/]|$)")
_PLAIN_END = r"(?=/|$|[\s'\"`)\]>:,;])"
"""What may follow a path prefix in prose: a separator, the end, or a character that cannot
continue a folder name there (quote, space, bracket, colon)."""
_TAIL = r"((?:/[^\s'\"`)\]>:,;/]*)*)"


@dataclass(frozen=True)
class Prefix:
    """One client prefix: `key` is how paths are compared (drive letter lowered, `/` as the
    separator), `shown` how the editor writes it (its own separators)."""

    key: str
    shown: str

    @property
    def windows(self) -> bool:
        return bool(_DRIVE.match(self.key))

    def uri(self, rest: str = "") -> str:
        """A percent-encoded `file://` URI for this prefix plus `rest` (a `/`-separated tail)."""
        path = self.key + rest
        return "file:///" + quote(path) if self.windows else "file://" + quote(path)

    def text(self, rest: str = "") -> str:
        return self.shown + (rest.replace("/", "\\") if "\\" in self.shown else rest)


@dataclass(frozen=True)
class PathMap:
    pairs: tuple[tuple[str, str], ...] = ()
    """(client prefix as given, server prefix), most specific first."""

    @classmethod
    def parse(cls, entries: Iterable[str] | Mapping[str, str] | None) -> PathMap:
        if isinstance(entries, Mapping):
            raw = [(str(k), str(v)) for k, v in entries.items()]
        else:
            raw = []
            for entry in entries or ():
                client, sep, server = _split(str(entry))
                if not sep:
                    raise PathMapError(f"path map {entry!r} is not CLIENT_PREFIX=SERVER_PREFIX")
                raw.append((client, server))
        items = [(client_prefix(c).shown, _server_prefix(s)) for c, s in raw]
        return cls(_ordered(items))

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def merged(self, other: PathMap) -> PathMap:
        return PathMap(_ordered({*other.pairs, *self.pairs}))

    def describe(self) -> str:
        return ", ".join(f"{c} (editor) = {s} (server)" for c, s in self.pairs) or "none"

    def _prefixes(self) -> list[tuple[Prefix, str]]:
        return [(client_prefix(c), s) for c, s in self.pairs]

    # ------------------------------------------------------------------ in: client -> server

    def to_server(self, path: str) -> str:
        """The server's name for a client path (POSIX or Windows); unchanged without a map."""
        if not self.pairs:
            return path
        key = _key(path)
        for client, server in self._prefixes():
            rest = _under(key, client.key, loose=client.windows)
            if rest is not None:
                return server + rest
        # Already the server's name (the server hands its own paths to its own commands).
        if any(_under(path, server) is not None for _, server in self.pairs):
            return path
        clients = ", ".join(c for c, _ in self.pairs)
        servers = ", ".join(s for _, s in self.pairs)
        raise PathMapError(
            f"{path} is outside the path map: the editor's prefixes are {clients} and the "
            f"server's are {servers}; add a --path-map (or initializationOptions.autocode.pathMap) "
            "entry for it"
        )

    def uri_to_server(self, uri: str) -> str:
        """A client's document URI as the server's own `file://` URI (unchanged without a map)."""
        if not self.pairs or not uri.startswith("file:"):
            return uri
        return "file://" + quote(self.to_server(uri_path(uri)))

    # ------------------------------------------------------------------ out: server -> client

    def uri_to_client(self, path_or_uri: str) -> str:
        """The client's percent-encoded `file://` URI for a server path or URI."""
        path = uri_path(path_or_uri) if path_or_uri.startswith("file:") else path_or_uri
        for client, server in self._prefixes():
            rest = _under(path, server)
            if rest is not None:
                return client.uri(rest)
        return "file://" + quote(path)

    def text_to_client(self, text: str) -> str:
        """Every server path (plain or in a `file://` URI) inside `text`, in the client's names."""
        for client, server in self._prefixes():
            # URIs first, so the plain pass below never meets a server path inside one.
            uri = client.uri().replace("\\", "\\\\")  # a replacement template, not a function
            for spelled in {server, quote(server)}:
                pattern = re.compile("file://" + re.escape(spelled) + r"(?=/|$|[\s'\"`)\]>,;#?])")
                text = pattern.sub(uri, text)
            plain = re.compile(r"(?<![\w/.%-])" + re.escape(server) + _PLAIN_END + _TAIL)
            text = plain.sub(functools.partial(_shown, client), text)
        return text

    def outbound(self, value: Any) -> Any:
        """A JSON-like value with every string's server paths in the client's names."""
        if not self.pairs:
            return value
        if isinstance(value, str):
            return self.text_to_client(value)
        if isinstance(value, dict):
            return {k: self.outbound(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.outbound(v) for v in value]
        return value


def _shown(client: Prefix, match: re.Match[str]) -> str:
    return client.text(match.group(1))


def uri_path(uri: str) -> str:
    """The decoded path of a `file://` URI, Windows drive letters kept (`c:/Users/…`)."""
    parsed = urlparse(uri)
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        return f"//{parsed.netloc}{path}"
    match = _DRIVE.match(path)
    if match:
        return match.group(1).lower() + ":" + path[match.end(1) + 1:]
    return path


def document_key(uri: str) -> str:
    """How two spellings of one document's URI compare equal (`file:///C:/a` and
    `file:///c%3A/a`; Windows paths without regard to case)."""
    path = _key(uri_path(uri)) if uri.startswith("file:") else uri
    return path.casefold() if _DRIVE.match(path) else path


@functools.lru_cache(maxsize=256)
def client_prefix(text: str) -> Prefix:
    """A client prefix from a POSIX path, a Windows path or a `file://` URI."""
    given = text.strip()
    if given.startswith("file:"):
        given = uri_path(given)
    if _DRIVE.match(given):
        key = _key(given)
        drive, rest = key[:2], posixpath.normpath(key[2:] or "/")
        key = drive + ("" if rest == "/" else rest)
        shown = given.lstrip("/").rstrip("\\/") or key
        if len(shown) == 2:
            shown += "\\" if "\\" in given else "/"
        return Prefix(key, shown[0].upper() + shown[1:])
    if not given.startswith("/"):
        raise PathMapError(
            f"path map prefix {text!r} is not an absolute path (a POSIX path, C:\\… or a file:// URI)"
        )
    norm = posixpath.normpath(given)
    norm = "" if norm == "/" else norm
    return Prefix(norm, norm)


def _server_prefix(text: str) -> str:
    if not text.startswith("/"):
        raise PathMapError(f"path map prefix {text!r} is not an absolute path")
    norm = posixpath.normpath(text)
    return "" if norm == "/" else norm


def _split(entry: str) -> tuple[str, str, str]:
    # The server side is a POSIX path: the last "=" followed by "/" separates the two.
    at = entry.rfind("=/")
    if at < 0:
        return entry.partition("=")
    return entry[:at], "=", entry[at + 1:]


def _key(path: str) -> str:
    """A path as compared with client prefixes: Windows drive letter lowered, `/` separators."""
    match = _DRIVE.match(path)
    if not match:
        return path
    rest = path[match.end(1) + 1:].replace("\\", "/")
    return match.group(1).lower() + ":" + rest


def _under(path: str, prefix: str, *, loose: bool = False) -> str | None:
    seen, wanted = (path.casefold(), prefix.casefold()) if loose else (path, prefix)
    if seen == wanted or (wanted.endswith(":") and seen == wanted + "/"):
        return ""
    if seen.startswith(wanted + "/"):
        return path[len(prefix):]
    return None


def _ordered(items: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(set(items), key=lambda p: (len(p[0]) + len(p[1]), p), reverse=True))


DEFAULT = PathMap()
"""The process-wide map from `--path-map`; each session may add its own from `initialize`."""
