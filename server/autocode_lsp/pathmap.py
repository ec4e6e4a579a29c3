"""Paths across a container boundary: the editor sees `/home/ana/app`, the server `/work/app`.

`--path-map CLIENT_PREFIX=SERVER_PREFIX` (repeatable) and `initializationOptions.autocode.pathMap`
(a list of the same strings, or an object `{client: server}`) say how the two sides name the
same folders. Every path or `file://` URI that comes in (workspace folders, `workspace`
arguments, documents) is turned into the server's name; every one that goes out (results,
notifications, messages, documents to open, errors) into the client's. A path that comes in
outside every client prefix cannot be meant for this server and is an error naming both sides.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


class PathMapError(ValueError):
    """A mapping that cannot be used, or a path outside it."""


@dataclass(frozen=True)
class PathMap:
    pairs: tuple[tuple[str, str], ...] = ()
    """(client prefix, server prefix), most specific first."""

    @classmethod
    def parse(cls, entries: Iterable[str] | Mapping[str, str] | None) -> PathMap:
        items: list[tuple[str, str]] = []
        if isinstance(entries, Mapping):
            raw = [(str(k), str(v)) for k, v in entries.items()]
        else:
            raw = []
            for entry in entries or ():
                client, sep, server = str(entry).partition("=")
                if not sep:
                    raise PathMapError(f"path map {entry!r} is not CLIENT_PREFIX=SERVER_PREFIX")
                raw.append((client, server))
        for client, server in raw:
            c, s = _prefix(client), _prefix(server)
            items.append((c, s))
        items.sort(key=lambda p: len(p[0]) + len(p[1]), reverse=True)
        return cls(tuple(items))

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def merged(self, other: PathMap) -> PathMap:
        return PathMap(tuple(sorted({*other.pairs, *self.pairs}, key=lambda p: len(p[0]) + len(p[1]), reverse=True)))

    def describe(self) -> str:
        return ", ".join(f"{c} (editor) = {s} (server)" for c, s in self.pairs) or "none"

    # ------------------------------------------------------------------ in: client -> server

    def to_server(self, path: str) -> str:
        """The server's name for a client path; unchanged without a map."""
        if not self.pairs:
            return path
        for client, server in self.pairs:
            rest = _under(path, client)
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

    # ------------------------------------------------------------------ out: server -> client

    def text_to_client(self, text: str) -> str:
        """Every server path (plain or in a `file://` URI) inside `text`, in the client's names."""
        for client, server in self.pairs:
            text = _replace_prefix(text, server, client)
            quoted_server, quoted_client = quote(server), quote(client)
            if quoted_server != server:
                text = _replace_prefix(text, quoted_server, quoted_client)
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


def _prefix(text: str) -> str:
    if not text.startswith("/"):
        raise PathMapError(f"path map prefix {text!r} is not an absolute path")
    norm = posixpath.normpath(text)
    return "" if norm == "/" else norm


def _under(path: str, prefix: str) -> str | None:
    if path == prefix:
        return ""
    if path.startswith(prefix + "/"):
        return path[len(prefix):]
    return None


def _replace_prefix(text: str, old: str, new: str) -> str:
    # `old` as a whole path component sequence: followed by a separator, the end, or a
    # character that cannot continue a folder name in prose (quote, space, bracket, colon).
    pattern = re.compile(re.escape(old) + r"(?=/|$|[\s'\"`)\]>:,;])")
    return pattern.sub(lambda _m: new, text)


DEFAULT = PathMap()
"""The process-wide map from `--path-map`; each session may add its own from `initialize`."""
