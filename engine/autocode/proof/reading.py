"""Bounded reading of the report files a test process wrote. The test process is untrusted:
a file may be huge, truncated, not UTF-8, deeply nested or hostile XML. Every reader here
either returns data or raises `Unreadable` with a sentence that says what was wrong.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from xml.etree import ElementTree

FILE_LIMIT = 64 << 20  # bytes of one report file
LINE_LIMIT = 1 << 20  # bytes of one JSON line
XML_DEPTH_LIMIT = 64
_DECLARATION = re.compile(rb"<!(?:doctype|entity)", re.IGNORECASE)


class Unreadable(Exception):
    """A report that cannot be used; str() is the reason the verdict shows."""


def read_bytes(path: Path, limit: int = FILE_LIMIT) -> bytes:
    try:
        # O_NOFOLLOW: a report path the test process replaced by a link is not followed
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError as exc:
        raise Unreadable(f"the test run wrote no report file ({path.name})") from exc
    except OSError as exc:
        raise Unreadable(f"the report file {path.name} cannot be read: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable(f"the report {path.name} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Unreadable(f"the report file {path.name} is larger than {limit >> 20} MiB")
    return data


def json_lines(data: bytes, name: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines report. A last line cut short (a run that was killed)
    is dropped; any other line that is not a JSON object makes the report unreadable."""
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if len(raw) > LINE_LIMIT:
            raise Unreadable(f"line {number} of the report {name} is longer than {LINE_LIMIT >> 10} KiB")
        try:
            value = json.loads(raw.decode("utf-8", "surrogateescape"))
        except ValueError as exc:
            if number == len(lines):  # no newline after it: the writer was stopped mid-line
                return
            raise Unreadable(f"line {number} of the report {name} is not JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise Unreadable(f"line {number} of the report {name} is not a JSON object")
        yield value


def json_document(data: bytes, name: str) -> Any:
    try:
        return json.loads(data.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"the report {name} is not valid JSON ({str(exc)[:200]})") from exc


def xml_document(data: bytes, name: str) -> ElementTree.Element:
    """The root of an XML report. Documents with a DOCTYPE (entities are how XML bombs and
    external fetches start) or nested deeper than XML_DEPTH_LIMIT are refused."""
    from xml.etree import ElementTree  # lazy: only Maven and Gradle reports are XML

    if _DECLARATION.search(data):
        raise Unreadable(f"the report {name} declares a DOCTYPE or entities; AutoCode does not read those")
    parser: ElementTree.XMLPullParser[ElementTree.Element] = ElementTree.XMLPullParser(events=("start", "end"))
    depth = 0
    root: ElementTree.Element | None = None
    try:
        for start in range(0, len(data), 1 << 16):
            parser.feed(data[start : start + (1 << 16)])
            for event, element in cast("Iterator[tuple[str, Any]]", parser.read_events()):
                if event == "start":
                    depth += 1
                    if root is None and isinstance(element, ElementTree.Element):
                        root = element
                    if depth > XML_DEPTH_LIMIT:
                        raise Unreadable(f"the report {name} nests deeper than {XML_DEPTH_LIMIT} elements")
                else:
                    depth -= 1
        parser.close()
    except ElementTree.ParseError as exc:
        raise Unreadable(f"the report {name} is not well-formed XML ({exc})") from exc
    if root is None:
        raise Unreadable(f"the report {name} is empty")
    return root
