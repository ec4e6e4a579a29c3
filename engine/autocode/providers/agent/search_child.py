"""The `search` fallback where ripgrep is missing: a child process the engine kills at its limit.

Run as `python -I -S search_child.py` in the copy, with standard input
holding, NUL-separated: the pattern, the file size cap, the column cap, the
skipped folder names (comma-separated), then the paths to search. It prints
what ripgrep prints with `--null --line-number` (`path NUL line:text`), in
the same path order, and exits 0 (matches), 1 (none) or 2 (a bad pattern,
its message on standard error). Python's `re` backtracks, so this process may
run until killed; that is why it is a process. Standard library only: it runs
without the engine's packages.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterator

CUT_NOTE = " [... omitted end of long line]"


def files(path: str, skipped: set[str], max_bytes: int) -> Iterator[str]:
    """Regular files under `path` in ripgrep's `--sort path` order; links are not followed."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        if info.st_size <= max_bytes:
            yield path
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink() or entry.name.endswith(".autocode-tmp"):
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in skipped:
                yield from files(os.path.join(path, entry.name), skipped, max_bytes)
        elif entry.is_file(follow_symlinks=False):
            yield from files(os.path.join(path, entry.name), skipped, max_bytes)


def main() -> int:
    fields = sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0")
    pattern, max_bytes, columns, skipped, paths = fields[0], int(fields[1]), int(fields[2]), fields[3], fields[4:]
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    out = sys.stdout.buffer
    found = False
    for top in paths:
        for path in files(top, set(filter(None, skipped.split(","))), max_bytes):
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            name = path.encode("utf-8", "surrogateescape")
            text = data.decode("utf-8", "replace")
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()  # a final newline ends the last line; it starts no new one
            for number, line in enumerate(lines, 1):
                if regex.search(line):
                    found = True
                    shown = line if len(line) <= columns else line[:columns] + CUT_NOTE
                    out.write(name + b"\0" + f"{number}:{shown}\n".encode("utf-8", "replace"))
    out.flush()
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
