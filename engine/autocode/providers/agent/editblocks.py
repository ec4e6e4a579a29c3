"""The text fallback for endpoints that take no tools: search/replace edit blocks.

The model writes each edit as

    path/to/file.py
    <<<<<<< SEARCH
    exact lines as they are now
    =======
    the lines that replace them
    >>>>>>> REPLACE

and may ask to see files with a line `READ path/to/file.py`. The engine
applies each block with the same exact-match rule as `edit_file` (an empty
SEARCH creates a new file), then answers with what happened, including the
tests' result after edits. A reply with no block and no READ ends the loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEARCH = re.compile(r"^<{5,9} ?SEARCH\s*$")
DIVIDER = re.compile(r"^={5,9}\s*$")
REPLACE = re.compile(r"^>{5,9} ?REPLACE\s*$")
READ = re.compile(r"^READ[: ]\s*`?([^`\s]+)`?\s*$")

INSTRUCTIONS = """\
You cannot call tools here. Make every change as one or more edit blocks:

path/to/file.py
<<<<<<< SEARCH
the exact lines as they are in the file now (copied character for character)
=======
the lines that replace them
>>>>>>> REPLACE

The SEARCH part must occur exactly once in the file. To create a file, leave SEARCH empty.
To see a file first, write a line `READ path/to/file.py` (and nothing else is needed).
After your blocks are applied the project's tests run and you get the result.
When the change is done and the tests pass, answer with a short summary of the change and no block."""


@dataclass(frozen=True)
class Block:
    path: str
    search: str
    replace: str


class BlockError(ValueError):
    pass


def parse(text: str) -> tuple[list[Block], list[str], list[str]]:
    """(blocks, paths to read, problems) from a reply. Problems are malformed blocks, reported back."""
    lines = text.splitlines()
    blocks: list[Block] = []
    reads: list[str] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = READ.match(line.strip())
        if m:
            reads.append(m.group(1))
            i += 1
            continue
        if SEARCH.match(line.strip()):
            path = _path_before(lines, i)
            j = i + 1
            search: list[str] = []
            while j < len(lines) and not DIVIDER.match(lines[j].strip()):
                search.append(lines[j])
                j += 1
            k = j + 1
            replace: list[str] = []
            while k < len(lines) and not REPLACE.match(lines[k].strip()):
                replace.append(lines[k])
                k += 1
            if j >= len(lines) or k >= len(lines):
                problems.append(f"a block starting at line {i + 1} has no ======= or >>>>>>> REPLACE line")
                break
            if path is None:
                problems.append(f"the block at line {i + 1} has no file path on the line before <<<<<<< SEARCH")
            else:
                blocks.append(Block(path, _join(search), _join(replace)))
            i = k + 1
            continue
        i += 1
    return blocks, reads, problems


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _path_before(lines: list[str], index: int) -> str | None:
    for back in range(index - 1, max(-1, index - 3), -1):
        candidate = lines[back].strip().strip("`*").strip()
        if candidate.startswith("```"):
            continue
        if candidate and " " not in candidate and not candidate.startswith(("<", "=", ">")):
            return candidate
        if candidate:
            return None
    return None
